"""Byte echo on Python asyncio streams, in the idiom of the asyncio docs'
"TCP echo server using streams" (https://docs.python.org/3.11/library/asyncio-stream.html#tcp-echo-server-using-streams),
made to loop until EOF.

Correct: after each writer.write() the handler awaits writer.drain(), which
blocks while the transport's write buffer is above its high-water mark
(64 KiB; "wait until it is appropriate to resume writing to the stream",
asyncio-stream.html#asyncio.StreamWriter.drain). While the handler waits it
does not call reader.read(), so the StreamReader's buffer fills past 2 * limit
and the reader pauses the transport's reading (StreamReader._maybe_resume_transport /
feed_data in Lib/asyncio/streams.py): backpressure reaches the client. At EOF
(read() returns b'') writer.close() closes the transport only after its
buffer is flushed (_SelectorTransport.close in Lib/asyncio/selector_events.py),
and wait_closed() waits for that. A reset surfaces as ConnectionError from
read() or drain(): the handler ends and the transport is closed.
At EMFILE asyncio's accept loop removes the listener's reader and retries
after ACCEPT_RETRY_DELAY (1 s) (BaseSelectorEventLoop._accept_connection).

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
            writer.write(data)
            await writer.drain()
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
    print(f"echo.py: listening on {addr} (Python {sys.version.split()[0]})", file=sys.stderr, flush=True)
    await stop.wait()
    server.close()
    for w in list(writers):
        w.transport.abort()


asyncio.run(main())
