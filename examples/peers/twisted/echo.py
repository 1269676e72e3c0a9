"""Byte echo on Twisted (the default reactor: epollreactor on Linux), in the
idiom of Twisted's "Writing Servers" howto (a Protocol whose dataReceived
writes to its transport), with flow control and half-close done the Twisted
way.

Flow control: a TCP transport is both an IConsumer and an IPushProducer
(twisted.internet.abstract.FileDescriptor). connectionMade registers the
transport as its own streaming producer, as twisted.protocols.portforward
registers one transport as the producer of the other: transport.write()
buffers in user space, and once more than transport.bufferSize (64 KiB) is
buffered, FileDescriptor._maybePauseProducer calls the producer's
pauseProducing(), here the transport's own, which is stopReading(); when
doWrite has handed the whole buffer to the kernel it calls resumeProducing()
(startReading()). So a client that does not read stops being read, and
memory stays bounded.

Half-close: the protocol provides IHalfCloseableProtocol, so at EOF the
transport calls readConnectionLost() instead of connectionLost() (which
would close at once and drop what is buffered: tcp.Connection.readConnectionLost).
readConnectionLost unregisters the producer (a registered producer keeps
loseConnection from closing: FileDescriptor.loseConnection's docstring) and
calls loseConnection(), which closes only after the write buffer is
flushed (FileDescriptor.doWrite -> _postLoseConnection). A reset ends in
connectionLost (the socket is closed).

SIGTERM/SIGINT: reactor.run() installs handlers that call reactor.stop();
at shutdown the reactor disconnects every selectable (ReactorBase.disconnectAll:
connectionLost(ConnectionLost), whatever is buffered is dropped) and run()
returns: exit 0. That is Twisted's idiom, not reactorlab's stop contract.

Listens on $REACTORLAB_LISTEN (host:port), else argv[1], else
127.0.0.1:7070; stops by itself after $LIFETIME_S (else argv[2], else 3600)
seconds. Run with the Python that has Twisted (Debian: /usr/bin/python3 with
python3-twisted).
"""
import os
import sys

from zope.interface import implementer

import twisted
from twisted.internet import interfaces, protocol, reactor


@implementer(interfaces.IHalfCloseableProtocol)
class Echo(protocol.Protocol):
    def connectionMade(self):
        # The transport produces (reads) and consumes (writes): as its own
        # streaming producer it is paused above bufferSize buffered and
        # resumed once the buffer is drained.
        self.transport.registerProducer(self.transport, True)

    def dataReceived(self, data):
        self.transport.write(data)

    def readConnectionLost(self):
        # EOF: echo what is still buffered, then close.
        self.transport.unregisterProducer()
        self.transport.loseConnection()

    def writeConnectionLost(self):
        self.transport.loseConnection()


def main():
    addr = os.environ.get("REACTORLAB_LISTEN") or (sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7070")
    lifetime = float(os.environ.get("LIFETIME_S") or (sys.argv[2] if len(sys.argv) > 2 else 3600))
    host, _, port = addr.rpartition(":")
    factory = protocol.Factory.forProtocol(Echo)
    factory.noisy = False
    reactor.listenTCP(int(port), factory, interface=host.strip("[]"))
    reactor.callLater(lifetime, reactor.stop)
    print(f"echo.py: listening on {addr} (Twisted {twisted.__version__}, {type(reactor).__name__})",
          file=sys.stderr, flush=True)
    reactor.run()


if __name__ == "__main__":
    main()
