"""Byte echo on Twisted as Twisted's documentation writes it: the Echo
protocol of the "Writing Servers" howto and of docs/core/examples/echoserv.py,
as it is:

    class Echo(Protocol):
        def dataReceived(self, data):
            self.transport.write(data)

No producer is registered, so nothing ever pauses reading: transport.write()
appends to the transport's user-space buffer without bound
(FileDescriptor.write only pauses a registered producer) while the reactor
goes on reading the socket. The protocol is not an IHalfCloseableProtocol,
so at the client's EOF tcp.Connection.readConnectionLost calls
connectionLost() at once, which closes the socket and drops whatever is
still buffered.

SIGTERM/SIGINT: reactor.run()'s handlers call reactor.stop() (exit 0).
Listens on $REACTORLAB_LISTEN (host:port), else argv[1], else
127.0.0.1:7070; stops by itself after $LIFETIME_S (else argv[2], else 3600)
seconds. Run with /usr/bin/python3 (Debian's python3-twisted).
"""
import os
import sys

import twisted
from twisted.internet import protocol, reactor


class Echo(protocol.Protocol):
    def dataReceived(self, data):
        self.transport.write(data)


def main():
    addr = os.environ.get("REACTORLAB_LISTEN") or (sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7070")
    lifetime = float(os.environ.get("LIFETIME_S") or (sys.argv[2] if len(sys.argv) > 2 else 3600))
    host, _, port = addr.rpartition(":")
    f = protocol.Factory()
    f.protocol = Echo
    f.noisy = False
    reactor.listenTCP(int(port), f, interface=host.strip("[]"))
    reactor.callLater(lifetime, reactor.stop)
    print(f"no-backpressure.py: listening on {addr} (Twisted {twisted.__version__}, {type(reactor).__name__})",
          file=sys.stderr, flush=True)
    reactor.run()


if __name__ == "__main__":
    main()
