#!/usr/bin/env python3
"""smallreads.py: a TCP byte-echo server on a single-threaded, level-triggered
event loop of its own (the `selectors` module), reading at most 61 bytes per
recv() call on purpose, so that reads never line up with whatever framing the
client uses.

Per connection: an output buffer (bytearray). A connection is read only while
its pending output is under HIGH_WATER; above it, reading stops (the socket is
registered for writing only) until the output drains under LOW_WATER, so a
client that does not read cannot make the server hold more than about 1 MiB
for it. Interest is level-triggered, so a connection is registered for exactly
what it can use now: EVENT_READ while reading is allowed and the peer has not
half-closed, EVENT_WRITE while output is pending. When the peer has half-closed
and all output is flushed, the server shuts down its write side and closes.

Each readiness event reads at most READS_PER_TURN times (about 4 KiB), so a
busy connection cannot keep the loop from the others.

EMFILE/ENFILE (or ENOBUFS/ENOMEM) on accept: the listener is unregistered and
re-registered after an exponential backoff (10 ms to 1 s): no spin, and
accepting resumes by itself once descriptors are free.

Address: $REACTORLAB_LISTEN, else argv[1]. Lifetime: argv[2] or
$OWN_LIFETIME seconds (default 3600). SIGTERM/SIGINT/lifetime: exit 0.
"""

import errno
import os
import selectors
import signal
import socket
import sys
import time

READ_SIZE = 61
READS_PER_TURN = 64
HIGH_WATER = 1 << 20
LOW_WATER = 256 << 10
ACCEPT_BATCH = 64
BACKOFF_MIN = 0.010
BACKOFF_MAX = 1.0

ACCEPT_RETRY_LATER = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
ACCEPT_IGNORE = {errno.ECONNABORTED, errno.EPROTO, errno.EINTR}


class Conn:
    __slots__ = ("sock", "out", "eof", "events")

    def __init__(self, sock):
        self.sock = sock
        self.out = bytearray()
        self.eof = False
        self.events = 0


class Server:
    def __init__(self, lsock):
        self.lsock = lsock
        self.sel = selectors.DefaultSelector()
        self.listening = False
        self.backoff = 0.0
        self.rearm_at = 0.0
        self.listen_on()

    # ---- listener -------------------------------------------------------

    def listen_on(self):
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        self.listening = True

    def accept_some(self):
        for _ in range(ACCEPT_BATCH):
            try:
                sock, _addr = self.lsock.accept()
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno in ACCEPT_IGNORE:
                    continue
                # Out of descriptors (or memory): stop watching the listener
                # for a while; pending connections wait in the backlog.
                self.backoff = min(BACKOFF_MAX, self.backoff * 2 if self.backoff else BACKOFF_MIN)
                self.sel.unregister(self.lsock)
                self.listening = False
                self.rearm_at = time.monotonic() + self.backoff
                if e.errno not in ACCEPT_RETRY_LATER:
                    print(f"own-smallreads: accept: {e}", file=sys.stderr)
                return
            self.backoff = 0.0
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                sock.close()
                continue
            c = Conn(sock)
            self.set_interest(c, selectors.EVENT_READ)

    # ---- connections ----------------------------------------------------

    def set_interest(self, c, events):
        if events == c.events:
            return
        if c.events == 0:
            self.sel.register(c.sock, events, c)
        elif events == 0:
            self.sel.unregister(c.sock)
        else:
            self.sel.modify(c.sock, events, c)
        c.events = events

    def close(self, c):
        if c.events:
            self.sel.unregister(c.sock)
            c.events = 0
        c.out = bytearray()
        c.sock.close()

    def flush(self, c):
        """Writes what the socket takes. False if the connection is gone."""
        while c.out:
            try:
                n = c.sock.send(c.out)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                return False
            if n <= 0:
                return True
            del c.out[:n]
        return True

    def service(self, c, mask):
        # An error or hang-up is reported in both bits, so whichever call
        # comes next (send or recv) sees it and the connection is released.
        if mask & selectors.EVENT_WRITE and c.out:
            if not self.flush(c):
                self.close(c)
                return
        if mask & selectors.EVENT_READ and c.events & selectors.EVENT_READ:
            sock = c.sock
            out = c.out
            for _ in range(READS_PER_TURN):
                try:
                    data = sock.recv(READ_SIZE)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    self.close(c)
                    return
                if not data:
                    c.eof = True
                    break
                out += data
                if len(out) >= HIGH_WATER:
                    break
            if out and not self.flush(c):  # answer at once when possible
                self.close(c)
                return
        if c.eof and not c.out:
            # Everything owed is written: send FIN, then release. Input was
            # read to EOF, so close() does not turn into a reset.
            try:
                c.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self.close(c)
            return
        self.update_interest(c)

    def update_interest(self, c):
        events = 0
        if c.out:
            events |= selectors.EVENT_WRITE
        if not c.eof:
            if c.events & selectors.EVENT_READ:
                if len(c.out) < HIGH_WATER:  # keep reading until the high mark
                    events |= selectors.EVENT_READ
            elif len(c.out) < LOW_WATER:  # paused: resume under the low mark
                events |= selectors.EVENT_READ
        self.set_interest(c, events)

    # ---- loop -----------------------------------------------------------

    def run(self, deadline):
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            timeout = deadline - now
            if not self.listening:
                if now >= self.rearm_at:
                    self.listen_on()
                else:
                    timeout = min(timeout, self.rearm_at - now)
            for key, mask in self.sel.select(timeout):
                c = key.data
                if c is None:
                    if self.listening:
                        self.accept_some()
                    continue
                if c.events == 0:
                    continue  # closed earlier in this batch
                self.service(c, mask)


def open_listener(addr):
    host, sep, port = addr.rpartition(":")
    if not sep:
        raise SystemExit(f"own-smallreads: address {addr!r} must be host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    infos = socket.getaddrinfo(host or None, int(port), socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    err = None
    for family, type_, proto, _canon, sockaddr in infos:
        s = socket.socket(family, type_, proto)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(sockaddr)
            s.listen(4096)
            s.setblocking(False)
            return s
        except OSError as e:
            err = e
            s.close()
    raise SystemExit(f"own-smallreads: listen {addr}: {err}")


def main():
    addr = os.environ.get("REACTORLAB_LISTEN") or (sys.argv[1] if len(sys.argv) > 1 else None)
    if not addr:
        raise SystemExit("usage: smallreads.py host:port [lifetime-seconds] (or $REACTORLAB_LISTEN)")
    lt = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("OWN_LIFETIME")
    lifetime = float(lt) if lt and float(lt) > 0 else 3600.0

    def stop(_signum, _frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    lsock = open_listener(addr)
    name = lsock.getsockname()
    shown = f"[{name[0]}]:{name[1]}" if lsock.family == socket.AF_INET6 else f"{name[0]}:{name[1]}"
    print(f"own-smallreads: listening on {shown}", file=sys.stderr, flush=True)
    Server(lsock).run(time.monotonic() + lifetime)
    sys.exit(0)


if __name__ == "__main__":
    main()
