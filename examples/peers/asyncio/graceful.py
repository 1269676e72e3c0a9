"""Byte echo on Python asyncio's Protocol API, in the idiom of the asyncio
docs' "TCP Echo Server" (https://docs.python.org/3.11/library/asyncio-protocol.html#tcp-echo-server),
with flow control, a control address, and a graceful stop on SIGTERM.

Each chunk data_received() brings is written back at once
(transport.write); what the socket does not take waits in the transport's
buffer. When that buffer passes its high-water mark (64 KiB) asyncio calls
pause_writing() and the protocol pauses its own reading
(transport.pause_reading), resumed by resume_writing() below the low-water
mark: backpressure reaches the client ("Flow Control Callbacks",
asyncio-protocol.html#flow-control-callbacks). At EOF, eof_received()
returns None, so the transport closes itself once its buffer is flushed
(_SelectorSocketTransport._read_ready__on_eof / close in
Lib/asyncio/selector_events.py). A reset ends in connection_lost().

The same echo is served on $REACTORLAB_CONTROL_LISTEN, else argv[2], if
given (the suite's PINGs, S2).

SIGTERM or SIGINT stops it as the suite's stop contract asks: Server.close()
stops listening on both addresses (new connections are refused); every
connection's transport.write_eof() half-closes it once its buffer is flushed
("Close the write end of the transport after flushing all buffered data",
asyncio-protocol.html#asyncio.WriteTransport.write_eof); what the client still
sends is read and discarded until its EOF (then the transport closes) or for
at most 3 s (then it is closed), so closing never meets unread data, which
the kernel would answer with RST. It exits 0 once every connection is gone.

Listens on $REACTORLAB_LISTEN (host:port), else argv[1]; lifetime in seconds
from $LIFETIME_S, else 3600.
"""
import asyncio
import os
import signal
import sys

DRAIN_S = 3.0
conns = set()


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.stopping = False
        self.gone = asyncio.get_running_loop().create_future()
        conns.add(self)

    def data_received(self, data):
        if not self.stopping:  # after the stop: discarded
            self.transport.write(data)

    def eof_received(self):
        return None  # close once the buffer is flushed

    def pause_writing(self):
        self.transport.pause_reading()

    def resume_writing(self):
        if not self.stopping:
            self.transport.resume_reading()

    def connection_lost(self, exc):
        conns.discard(self)
        if not self.gone.done():
            self.gone.set_result(None)

    def stop(self):
        """Half-close once flushed, then discard until the client's EOF."""
        self.stopping = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.transport.resume_reading()
        asyncio.get_running_loop().call_later(DRAIN_S, self.transport.close)


def parse(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


async def main():
    addr = os.environ.get("REACTORLAB_LISTEN") or (sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7070")
    control = os.environ.get("REACTORLAB_CONTROL_LISTEN") or (sys.argv[2] if len(sys.argv) > 2 else "")
    lifetime = float(os.environ.get("LIFETIME_S") or 3600)
    loop = asyncio.get_running_loop()
    servers = [await loop.create_server(Echo, *parse(addr))]
    if control:
        servers.append(await loop.create_server(Echo, *parse(control)))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.call_later(lifetime, stop.set)
    print(f"graceful.py: listening on {addr}, control {control or 'none'} (Python {sys.version.split()[0]})", file=sys.stderr, flush=True)
    await stop.wait()
    for s in servers:
        s.close()
    for c in list(conns):
        c.stop()
    if conns:
        await asyncio.wait([c.gone for c in conns], timeout=DRAIN_S + 1)


asyncio.run(main())
