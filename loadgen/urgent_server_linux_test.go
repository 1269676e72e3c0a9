//go:build linux

package loadgen_test

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// urgentAnswer decides the answer to the n-th urgent byte (from 0) that a
// connection of an urgent server read: the byte to send back, and how
// long after reading it; ok false sends none.
type urgentAnswer func(n int, b byte) (answer byte, delay time.Duration, ok bool)

// promptAnswer answers every urgent byte at once with its own value.
func promptAnswer(_ int, b byte) (byte, time.Duration, bool) { return b, 0, true }

// startUrgentServer is a target that keeps the urgent wire contract (on
// plain descriptors: the Go poller does not wait for EPOLLPRI): it echoes
// in-band bytes back, and reads each urgent byte (recv MSG_OOB, before the
// in-band bytes of the same wake-up) and answers it with send(MSG_OOB) as
// answer says, each answer after the previous one, and never before its
// in-band reads have reached the byte's mark (a short read): the answer
// lets the client send its next urgent byte, which would otherwise turn
// this one into an in-band byte. One goroutine serves each connection
// (a hand-off to another would put the Go scheduler's delays in the
// answers). Everything it starts is stopped, and every descriptor
// closed, when the test ends. It returns the address.
func startUrgentServer(t *testing.T, answer urgentAnswer) string {
	t.Helper()
	return startObservedUrgentServer(t, answer, nil)
}

// answerObserver is told, for the n-th urgent byte of a connection, when
// the server read it and when it sent the answer (called on the
// connection's goroutine).
type answerObserver func(n int, read, sent time.Time)

// startObservedUrgentServer is startUrgentServer that tells observe (if
// not nil) of every answer sent.
func startObservedUrgentServer(t *testing.T, answer urgentAnswer, observe answerObserver) string {
	t.Helper()
	done := make(chan struct{})
	addr := serveEach(t, func(c net.Conn) {
		f, err := c.(*net.TCPConn).File() // a duplicate of c's descriptor
		c.Close()
		if err != nil {
			t.Errorf("urgent server: %v", err)
			return
		}
		defer f.Close()
		fd := int(f.Fd())
		if err := unix.SetNonblock(fd, false); err != nil {
			t.Errorf("urgent server: %v", err)
			return
		}
		(&urgentConn{fd: fd, answer: answer, observe: observe, buf: make([]byte, 64<<10)}).serve(done)
	})
	t.Cleanup(func() { close(done) }) // runs before serveEach's, which waits for the connections
	return addr
}

// pendingAnswer is the answer to the n-th urgent byte, read at read, and
// when it is due.
type pendingAnswer struct {
	n         int
	b         byte
	read, due time.Time
}

// urgentConn is one connection of an urgent server.
type urgentConn struct {
	fd      int
	answer  urgentAnswer
	observe answerObserver
	buf     []byte
	n       int             // urgent bytes read
	held    *pendingAnswer  // until the in-band reads reach its mark
	queue   []pendingAnswer // answers to send, in order
}

// serve serves the connection until EOF, an error or done.
func (u *urgentConn) serve(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		if !u.sendDue() {
			return
		}
		timeout := 20 * time.Millisecond
		if len(u.queue) > 0 {
			timeout = min(timeout, time.Until(u.queue[0].due))
		}
		pfd := []unix.PollFd{{Fd: int32(u.fd), Events: unix.POLLIN | unix.POLLPRI}}
		k, err := unix.Poll(pfd, int(max(timeout, 0).Milliseconds()))
		if err == unix.EINTR || k == 0 {
			continue
		} else if err != nil {
			return
		}
		if pfd[0].Revents&unix.POLLPRI != 0 {
			u.readUrgent()
		}
		if pfd[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			u.release() // no in-band byte before the mark
			continue
		}
		k, err = unix.Read(u.fd, u.buf)
		if err != nil || k == 0 {
			return
		}
		if k < len(u.buf) { // a short read: at or past the mark
			u.release()
		}
		if _, err := unix.Write(u.fd, u.buf[:k]); err != nil {
			return
		}
	}
}

// readUrgent reads the urgent byte and holds the answer the test wants.
func (u *urgentConn) readUrgent() {
	var b [1]byte
	if k, _, err := unix.Recvfrom(u.fd, b[:], unix.MSG_OOB); err == nil && k == 1 {
		if a, delay, ok := u.answer(u.n, b[0]); ok {
			now := time.Now()
			u.held = &pendingAnswer{u.n, a, now, now.Add(delay)}
		}
		u.n++
	}
}

// release queues the held answer: the in-band reads have reached its mark.
func (u *urgentConn) release() {
	if u.held != nil {
		u.queue = append(u.queue, *u.held)
		u.held = nil
	}
}

// sendDue sends the queued answers that are due; false on an error.
func (u *urgentConn) sendDue() bool {
	for len(u.queue) > 0 && !time.Now().Before(u.queue[0].due) {
		a := u.queue[0]
		if err := unix.Sendto(u.fd, []byte{a.b}, unix.MSG_OOB|unix.MSG_NOSIGNAL, nil); err != nil {
			return false
		}
		if u.observe != nil {
			u.observe(a.n, a.read, time.Now())
		}
		u.queue = u.queue[1:]
	}
	return true
}
