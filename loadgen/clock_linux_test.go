//go:build linux

package loadgen

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/epollsys"
)

// TestWriteTimeAfterWait: a frame's recorded write time (slot.actual) is
// never before the moment it was written. A hot source fills its socket
// (small kernel buffers on both sides, a batch far larger), the target
// reads nothing for a stall, then reads everything; the loop sleeps in
// epoll_wait through the stall. Every frame written after the target
// resumed must carry a write time at or after the resumption, not the
// time the loop went to sleep.
func TestWriteTimeAfterWait(t *testing.T) {
	t.Parallel()
	const stall = 150 * time.Millisecond
	l, c, peer := smallBufferHotLoop(t)
	l.t0, l.now = epollsys.Nanotime(), 0
	l.phase, l.sendEnd, l.measureFrom = phaseSending, never, 0
	c.start() // K frames of 1 KiB: the socket fills at once
	if !c.busy() {
		t.Fatalf("the batch fit in the socket buffers; the test needs it not to")
	}
	t0 := l.t0
	resumed := make(chan int64, 1)
	go func() {
		time.Sleep(stall)
		resumed <- epollsys.Nanotime() - t0 // before the first read: no write can follow the stall earlier
		io.Copy(io.Discard, peer)
	}()
	resumeAt := int64(-1)
	checked := 0
	for deadline := time.Now().Add(5 * time.Second); checked < 16 && time.Now().Before(deadline); {
		from := c.sentSeq
		l.clock()
		if err := l.wait(l.now + int64(time.Second)); err != nil {
			t.Fatal(err)
		}
		returned := epollsys.Nanotime() - t0
		if resumeAt < 0 {
			select {
			case resumeAt = <-resumed:
			default:
			}
		}
		if resumeAt < 0 || returned < resumeAt {
			continue // frames completed before the target resumed (if any) are not in question
		}
		for seq := from; seq < c.sentSeq; seq++ {
			s := c.ring[seq&c.mask]
			if s.actual < resumeAt {
				t.Fatalf("seq %d written after the stall ended (%v) is recorded as written at %v: %v before",
					seq, time.Duration(resumeAt), time.Duration(s.actual), time.Duration(resumeAt-s.actual))
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no frame was written after the stall")
	}
}

// smallBufferHotLoop connects a loop with one hot source (256 frames of 1 KiB
// in flight) to a listener of its own, with 4 KiB kernel buffers on both
// sides, and returns the loop, its source and the target's end of the
// connection (which reads nothing until the caller makes it). Everything is
// closed at the end of the test.
func smallBufferHotLoop(t *testing.T) (*loop, *conn, net.Conn) {
	t.Helper()
	ln, accepted := listenSmallRcvbuf(t)
	cfg := Config{DataAddr: ln.Addr().String(), Hot: 1, InFlight: 256, Payload: 1000, Duration: time.Minute}.WithDefaults()
	sa, err := resolve(cfg.DataAddr)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLoop(cfg, nil, sa, sa)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.closeAll)
	if err := l.connectAll(); err != nil {
		t.Fatal(err)
	}
	peer, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { peer.Close() })
	c := l.conns[0]
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	return l, c, peer
}

// listenSmallRcvbuf listens on a loopback port with a 4 KiB receive buffer
// and accepts one connection, delivered on the channel (closed if the
// accept fails). The listener is closed at the end of the test.
func listenSmallRcvbuf(t *testing.T) (net.Listener, <-chan net.Conn) {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	return ln, accepted
}
