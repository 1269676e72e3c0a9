"""Byte echo, a process per connection: Python's socketserver.ForkingTCPServer.

A test target (TestForkingServerIsNotDead): every connection is served by a
child process that exits when its connection ends, the readiness probe's
included, which the watch on a target's processes must not take for a crash.
(Under the whole catalogue it is inconclusive on R4, whose tables never fill,
and on I3 and W4, since a child writes each read back before reading again;
and it fails R3: socketserver's listen backlog of 5 drops an accept storm's
SYNs.)

Listens on $REACTORLAB_LISTEN (else the first argument); exits 0 on SIGTERM or
SIGINT, or by itself after $LIFETIME_S seconds (default 3600).
"""
import os
import signal
import socketserver
import sys
import threading


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            b = self.request.recv(65536)
            if not b:
                break
            self.request.sendall(b)
        self.request.shutdown(socket_shut_wr)


socket_shut_wr = 1


class Server(socketserver.ForkingTCPServer):
    allow_reuse_address = True
    max_children = 1024  # the default, 40, would make the 41st client wait


def main():
    addr = os.environ.get("REACTORLAB_LISTEN") or (sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7070")
    host, port = addr.rsplit(":", 1)
    srv = Server((host, int(port)), Echo)
    stop = lambda *_: threading.Thread(target=srv.shutdown).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Timer(float(os.environ.get("LIFETIME_S", "3600")), srv.shutdown).start()
    print(f"forking: listening on {addr}", file=sys.stderr, flush=True)
    srv.serve_forever()
    os._exit(0)  # the lifetime timer thread must not keep the process up


if __name__ == "__main__":
    main()
