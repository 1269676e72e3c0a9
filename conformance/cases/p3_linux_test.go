//go:build linux

package cases

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/conformance"
)

// closeNoCancel is a byte echo with the bug of liburing's
// close-no-cancel peer, in threads and blocking system calls: each
// connection has a thread that reads and one that writes its out-queue,
// and the result of a write is routed by the descriptor number it was
// written on, to whichever connection holds that number when it returns.
// At the end of a connection's stream the reader closes the descriptor
// (closeDelay after reading the end: a loop the machine starves acts on
// it that much later) without waiting for the write in flight, which
// holds its own reference to the socket (close(2): a blocking call in
// another thread keeps the open file until it returns). The number is
// free at once; when the old write returns, the connection that took the
// number has its out-queue advanced by bytes it never sent.
type closeNoCancel struct {
	closeDelay time.Duration
	mu         sync.Mutex
	byFd       map[int]*cncConn
	wg         sync.WaitGroup
}

// cncConn is one connection: its out-queue, and skip, what the next bytes
// queued lose (a result routed to it counted more than it had queued).
type cncConn struct {
	fd     int
	q      []byte
	skip   int
	closed bool
	wake   *sync.Cond
}

func (s *closeNoCancel) Serve(ctx context.Context, ln net.Listener) error {
	s.byFd = map[int]*cncConn{}
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		return err
	}
	defer s.wg.Wait()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		// Wakes every blocked read and write: the threads close their
		// descriptors and end.
		s.mu.Lock()
		for fd := range s.byFd {
			unix.Shutdown(fd, unix.SHUT_RDWR)
		}
		s.mu.Unlock()
	}()
	var lfd int
	if err := raw.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
		return err
	}
	for ctx.Err() == nil {
		if _, err := unix.Poll([]unix.PollFd{{Fd: int32(lfd), Events: unix.POLLIN}}, 20); err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		nfd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC) // a blocking socket; the listener is not
		if err != nil {
			continue
		}
		c := &cncConn{fd: nfd, wake: sync.NewCond(&s.mu)}
		s.mu.Lock()
		s.byFd[nfd] = c
		s.mu.Unlock()
		s.wg.Add(2)
		go s.read(c)
		go s.write(c)
	}
	return nil
}

func (s *closeNoCancel) read(c *cncConn) {
	defer s.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(c.fd, buf)
		if n > 0 {
			s.mu.Lock()
			b := buf[:n]
			drop := min(c.skip, len(b))
			c.skip -= drop
			c.q = append(c.q, b[drop:]...)
			c.wake.Broadcast()
			s.mu.Unlock()
			continue
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n == 0 && err == nil {
			time.Sleep(s.closeDelay) // the end of the stream, acted on late
		}
		s.mu.Lock()
		if s.byFd[c.fd] == c {
			delete(s.byFd, c.fd)
		}
		c.closed = true
		c.wake.Broadcast()
		unix.Close(c.fd) // the bug: a write in flight is not waited for
		s.mu.Unlock()
		return
	}
}

func (s *closeNoCancel) write(c *cncConn) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		for len(c.q) == 0 && !c.closed {
			c.wake.Wait()
		}
		if c.closed {
			s.mu.Unlock()
			return
		}
		chunk := append([]byte(nil), c.q[:min(len(c.q), 64<<10)]...)
		fd := c.fd
		s.mu.Unlock()
		n, err := unix.Write(fd, chunk)
		// The bug: the result goes to whichever connection holds fd now.
		s.mu.Lock()
		t := s.byFd[fd]
		switch {
		case t == nil:
		case err != nil:
			unix.Shutdown(fd, unix.SHUT_RDWR)
		default:
			drop := min(n, len(t.q))
			t.q = t.q[drop:]
			t.skip += n - drop
		}
		s.mu.Unlock()
	}
}

// A close without cancel that comes some milliseconds after the server
// reads the end of the stream — a loop the machine starves — must still
// fail P3: its send round waits for the server to let go of A's number,
// with A's write still in flight, before B is opened. P3 used to open B
// 5 ms after A's half-close, found B on a number of its own, and passed
// on the reset rounds.
func TestP3CatchesACloseWithoutCancelActedOnLate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: P3 takes about 3 s here")
	}
	server := &closeNoCancel{closeDelay: 30 * time.Millisecond}
	r := runCaseOn(t, "P3", conformance.GoServer{Label: "close-no-cancel", Serve: server.Serve}, conformance.Options{})
	if r.Verdict != conformance.Fail || r.Cause != conformance.CauseClaim {
		t.Errorf("P3 on a server that closes a connection without waiting for its write in flight, and routes the write's result by descriptor number: %s (%s): %s; want a claim failure", r.Verdict, r.Cause, r.Reason)
	}
}
