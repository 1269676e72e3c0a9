//go:build linux

package loadgen

import (
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/internal/epollsys"
	"golang.org/x/sys/unix"
)

// TestUringOneEnterPerRound: on the uring engine a round's sends and recv
// arms, across every connection, reach the kernel in one io_uring_enter,
// and the sends' completions mark the frames sent as writes do. Sixteen
// hot sources each build a batch (start); one wait with its deadline
// already passed then submits 16 sends and 16 multishot recvs in a single
// enter (the epoll engine makes 16 writes there, and a read per readable
// connection later). The loop then runs until every frame is echoed and
// settled.
func TestUringOneEnterPerRound(t *testing.T) {
	if err := EngineAvailable(EngineUring); err != nil {
		t.Skipf("the %s engine cannot run here: %v", EngineUring, err)
	}
	const conns, k = 16, 4
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var echoes sync.WaitGroup
	t.Cleanup(echoes.Wait) // last: each echo ends once the loop's side has closed
	t.Cleanup(func() { ln.Close() })
	echoes.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			echoes.Go(func() { io.Copy(c, c); c.Close() })
		}
	})
	cfg := Config{DataAddr: ln.Addr().String(), Hot: conns, InFlight: k, Duration: time.Minute, Engine: EngineUring}.WithDefaults()
	sa, err := resolve(cfg.DataAddr)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLoop(cfg, nil, sa, sa)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.closeAll) // after closeRing below: the descriptors and the waker's eventfd
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := l.openRing(); err != nil {
		t.Fatal(err)
	}
	defer l.closeRing() // on this thread, before closeAll
	if err := l.connectAll(); err != nil {
		t.Fatal(err)
	}
	// The engine's run connects on epoll before the ring takes over: wait,
	// as it does, until every connection is established.
	for _, c := range l.conns {
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}
		if n, err := unix.Poll(pfd, 2000); err != nil || n != 1 || pfd[0].Revents&unix.POLLOUT == 0 {
			t.Fatalf("%s: not connected within 2 s: poll %d %v, revents %#x", c.name, n, err, pfd[0].Revents)
		}
	}
	l.t0, l.now = epollsys.Nanotime(), 0
	l.phase, l.sendEnd, l.measureFrom = phaseSending, never, 0
	l.ur.activate()
	if _, err := l.ur.ring.Submit(); err != nil { // the waker's read, armed with the ring
		t.Fatal(err)
	}
	for _, c := range l.conns {
		c.start()
		if c.written != 0 || !c.busy() {
			t.Fatalf("%s wrote %d bytes before the round's enter (busy %v): the engine must queue its sends", c.name, c.written, c.busy())
		}
	}
	// No refill: the first batch is the test's (a hot source sends again
	// when one of its frames is answered, and the first wait may reap
	// answers already).
	l.phase = phaseDraining
	before := l.ur.ring.Stats()
	if err := l.wait(l.now); err != nil {
		t.Fatal(err)
	}
	after := l.ur.ring.Stats()
	if enters, sqes := after.Enters-before.Enters, after.Submitted-before.Submitted; enters != 1 || sqes != 2*conns {
		t.Fatalf("the round took %d io_uring_enter calls for %d SQEs; want 1 for %d (a send and a recv per connection)", enters, sqes, 2*conns)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		settled := 0
		for _, c := range l.conns {
			if c.acct.Echoed == k && c.live == 0 {
				settled++
			}
		}
		if settled == conns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sources had their %d frames echoed and settled within 5 s", settled, conns, k)
		}
		l.clock()
		if err := l.wait(l.now + int64(10*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range l.conns {
		if c.acct.Sent != k || c.written != uint64(k*c.frameSize) || c.sentSeq != k {
			t.Errorf("%s: sent %d frames, %d bytes, sentSeq %d; want %d frames of %d bytes", c.name, c.acct.Sent, c.written, c.sentSeq, k, c.frameSize)
		}
	}
}
