"""BUGGY byte echo on Python asyncio streams: echo.py without
`await writer.drain()`, as many examples write it.

StreamWriter.write() never blocks and never refuses data: "the data is
buffered" and "should be used along with the drain() method"
(https://docs.python.org/3.11/library/asyncio-stream.html#asyncio.StreamWriter.write).
The transport does tell the protocol to pause writing above its high-water
mark (64 KiB), but only drain() waits on that; without it the handler keeps
calling reader.read(), so the StreamReader never fills and never pauses the
transport's reading. A client that writes without reading is read as fast as
it sends and its echoes accumulate in the transport's buffer without bound:
fails W1. Everything else is as echo.py (at EOF writer.close() still flushes
the buffer before closing; a reset makes read() raise ConnectionError).

Listens on $REACTORLAB_LISTEN (host:port), else argv[1]; lifetime in seconds
from $LIFETIME_S, else argv[2], else 3600. Exits 0 on SIGTERM/SIGINT.
"""
import asyncio
import os
import signal
import sys

writers = set()


async def handle_echo(reader, writer):
    writers.add(writer)
    try:
        while data := await reader.read(65536):
            writer.write(data)  # BUG: no `await writer.drain()`
        writer.close()
        await writer.wait_closed()
    except OSError:  # ConnectionResetError, BrokenPipeError: the transport is closed
        writer.close()
    finally:
        writers.discard(writer)


async def main():
    addr = os.environ.get("REACTORLAB_LISTEN") or (sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7070")
    lifetime = float(os.environ.get("LIFETIME_S") or (sys.argv[2] if len(sys.argv) > 2 else 3600))
    host, _, port = addr.rpartition(":")
    server = await asyncio.start_server(handle_echo, host.strip("[]"), int(port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.call_later(lifetime, stop.set)
    print(f"no-drain.py: listening on {addr} (Python {sys.version.split()[0]})", file=sys.stderr, flush=True)
    await stop.wait()
    server.close()
    for w in list(writers):
        w.transport.abort()


asyncio.run(main())
