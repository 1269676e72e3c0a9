"""graceful.py with the stop that many asyncio servers write: at SIGTERM
Server.close(), then transport.abort() on every connection (as echo.py here
does). abort() "closes the transport immediately, without waiting for
pending operations to complete; buffered data will be lost"
(asyncio-protocol.html#asyncio.BaseTransport.abort): the kernel closes the
socket with the client's unread bytes in its receive queue and answers with
RST, not FIN, and the echoes still buffered are lost (X3). The process then
exits at once.

Everything else is graceful.py's: the same echo on $REACTORLAB_LISTEN and
$REACTORLAB_CONTROL_LISTEN, flow control, close at EOF once flushed.
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
        """The bug: drop the buffer and reset."""
        self.transport.abort()


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
    print(f"abort-on-term.py: listening on {addr}, control {control or 'none'} (Python {sys.version.split()[0]})", file=sys.stderr, flush=True)
    await stop.wait()
    for s in servers:
        s.close()
    for c in list(conns):
        c.stop()
    if conns:
        await asyncio.wait([c.gone for c in conns], timeout=DRAIN_S + 1)


asyncio.run(main())
