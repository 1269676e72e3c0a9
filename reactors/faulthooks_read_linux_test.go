//go:build linux

package reactors_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// The fault-hook detectors of the read path (faulthooks_linux_test.go has
// the rows): framing (F), readiness and accept (R), budgets (S), and the
// frame helpers every family uses.

// detectOverSize: a 64 MiB header (limit 1 MiB) must be answered with
// REJECT and EOF, without the process allocating the declared size, while
// another connection is served.
func detectOverSize(r *reactors.Reactor) error {
	good, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer good.Close()
	bad, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer bad.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	hdr := make([]byte, wire.HeaderSize)
	wire.PutHeader(hdr, wire.Header{Length: 64<<20 + 28, Kind: wire.KindData, Token: 9, Seq: 7})
	if _, err := bad.Conn.Write(hdr); err != nil {
		return err
	}
	if err := expectRejectThenEOF(bad, "over-size header"); err != nil {
		return err
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		return fmt.Errorf("allocated %d bytes refusing a 64 MiB header", grew)
	}
	if err := good.Send(wire.KindData, 1, 1, []byte("still served")); err != nil {
		return err
	}
	if h, p, err := good.Recv(5 * time.Second); err != nil || string(p) != "still served" {
		return fmt.Errorf("other connection: %v %q %v", h.Kind, p, err)
	}
	// Counters are published at most a round late: wait for it.
	if !reactortest.WaitFor(2*time.Second, func() bool { return r.Stats().Counters.OverSizeClosed == 1 }) {
		return fmt.Errorf("oversize_closed = %d, want 1", r.Stats().Counters.OverSizeClosed)
	}
	return nil
}

// detectSplitFrames (F1): three DATA frames written in pieces, each piece
// read by the reactor before the next is written, cut inside a header,
// right after one, inside a payload and across frames; every echo must
// arrive intact and in order.
func detectSplitFrames(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	const n, size = 3, 700
	stream := dataFrames(1, 0, n, size)
	fs := wire.HeaderSize + size
	cuts := []int{10, wire.HeaderSize, wire.HeaderSize + 8, 500, fs + 20, 2*fs + 40, len(stream) - 3, len(stream)}
	c0 := r.Stats().Counters
	prev := 0
	for _, cut := range cuts {
		if _, err := c.Conn.Write(stream[prev:cut]); err != nil {
			h, reason, _ := c.Recv(time.Second) // what the reactor said before it closed
			return fmt.Errorf("split frames: writing bytes %d..%d: %w (the reactor had answered %v %q)", prev, cut, err, h.Kind, reason)
		}
		// The next piece must come in another read: wait until this one was
		// read (or the connection closed).
		if !reactortest.WaitFor(2*time.Second, func() bool {
			c := r.Stats().Counters
			return c.BytesIn >= c0.BytesIn+uint64(cut) || c.ConnsClosed > c0.ConnsClosed
		}) {
			return fmt.Errorf("split frames: bytes %d..%d never read", prev, cut)
		}
		prev = cut
	}
	return expectEchoes(c, 1, n, size, 2*time.Second, "split frames")
}

// detectFrameLimitEdge (F3): frames of exactly MaxFrame-1 and MaxFrame
// bytes (header included) are echoed intact; a header declaring
// MaxFrame+1 is answered with REJECT and EOF.
func detectFrameLimitEdge(r *reactors.Reactor) error {
	limit := r.Config().MaxFrame
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	for i, size := range []int{limit - 1, limit} {
		p := make([]byte, size-wire.HeaderSize)
		reactortest.Payload(p, 2, uint64(i))
		if err := c.Send(wire.KindData, 2, uint64(i), p); err != nil {
			return err
		}
		h, got, err := c.Recv(2 * time.Second)
		if err != nil || h.Kind != wire.KindData || !bytes.Equal(got, p) {
			return fmt.Errorf("frame of %d bytes (limit %d): got %v %d bytes (intact %v) %v, want its echo", size, limit, h.Kind, len(got), bytes.Equal(got, p), err)
		}
	}
	over, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer over.Close()
	hdr := make([]byte, wire.HeaderSize)
	wire.PutHeader(hdr, wire.Header{Length: uint32(limit + 1 - 4), Kind: wire.KindData, Token: 3, Seq: 1})
	if _, err := over.Conn.Write(hdr); err != nil {
		return err
	}
	return expectRejectThenEOF(over, fmt.Sprintf("header declaring %d bytes (limit %d)", limit+1, limit))
}

// dataFrames returns n DATA frames of size bytes each (payloads as
// reactortest.Payload makes them for token, seq from first), as one
// stream.
func dataFrames(token uint64, first, n, size int) []byte {
	var stream []byte
	p := make([]byte, size)
	for i := first; i < first+n; i++ {
		reactortest.Payload(p, token, uint64(i))
		stream = wire.AppendFrame(stream, wire.KindData, 0, token, uint64(i), 0, p)
	}
	return stream
}

// expectEchoes reads n echoes from c, each within timeout, and checks them
// against dataFrames(token, 0, n, size): DATA, in order, intact.
func expectEchoes(c *reactortest.Client, token uint64, n, size int, timeout time.Duration, what string) error {
	return expectEchoesFrom(c, token, 0, n, size, timeout, what)
}

// expectEchoesFrom is expectEchoes for dataFrames(token, first, n, size).
func expectEchoesFrom(c *reactortest.Client, token uint64, first, n, size int, timeout time.Duration, what string) error {
	want := make([]byte, size)
	for i := first; i < first+n; i++ {
		h, got, err := c.Recv(timeout)
		reactortest.Payload(want, token, uint64(i))
		if err != nil || h.Kind != wire.KindData || h.Seq != uint64(i) || !bytes.Equal(got, want) {
			return fmt.Errorf("%s: echo %d of %d: got %v seq %d, %d bytes (intact %v), %v", what, i-first, n, h.Kind, h.Seq, len(got), bytes.Equal(got, want), err)
		}
	}
	return nil
}

// expectRejectThenEOF reads a REJECT, then EOF, from c: the answer to a
// frame header the reactor refuses (what says which).
func expectRejectThenEOF(c *reactortest.Client, what string) error {
	if h, reason, err := c.Recv(2 * time.Second); err != nil || h.Kind != wire.KindReject {
		return fmt.Errorf("%s: got %v %q %v, want REJECT", what, h.Kind, reason, err)
	}
	if _, _, err := c.Recv(2 * time.Second); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: after REJECT: %v, want EOF", what, err)
	}
	return nil
}

// detectStall: 4 connections each make 50 round trips, one frame at a
// time, so every frame needs the source re-armed; each reply must come
// within 2 s (a correct reactor needs well under a millisecond).
func detectStall(r *reactors.Reactor) error {
	errs := make(chan error, 4)
	for c := 0; c < 4; c++ {
		go func() {
			cl, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for i := 0; i < 50; i++ {
				if err := cl.Send(wire.KindData, uint64(c), uint64(i), []byte("ping")); err != nil {
					errs <- err
					return
				}
				if _, _, err := cl.Recv(2 * time.Second); err != nil {
					errs <- fmt.Errorf("conn %d: no reply to round trip %d: %w", c, i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for c := 0; c < 4; c++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// detectBurstStall: 300 frames of 8 KiB (2.4 MiB) written at once, then
// nothing: each echo must arrive within 2 s of the previous one (a correct
// reactor needs well under a millisecond). Work left after a budget
// (ET: no new edge; ingress: no new eventfd write) is lost without the
// ready queue and the pending rule.
func detectBurstStall(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	const n, size = 300, 8 << 10
	burst := dataFrames(1, 0, n, size)
	go c.Conn.Write(burst) // the reader below must run concurrently
	for i := 0; i < n; i++ {
		h, _, err := c.Recv(2 * time.Second)
		if err != nil {
			return fmt.Errorf("burst: %d of %d echoes, then %w (counters %+v)", i, n, err, r.Stats().Counters)
		}
		if h.Seq != uint64(i) {
			return fmt.Errorf("burst: echo %d has seq %d", i, h.Seq)
		}
	}
	return nil
}

// detectUnbudgetedTurn: one source with 4 MiB waiting must be served in
// turns of at most the byte budget (64 KiB), so other sources get theirs.
func detectUnbudgetedTurn(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	sizes := make([]int, 64)
	for i := range sizes {
		sizes[i] = 64 << 10
	}
	if err := reactortest.Echo(r.Addr().String(), 1, sizes, 10*time.Second); err != nil {
		return err
	}
	hits := func() uint64 { c := r.Stats().Counters; return c.ByteBudgetHits + c.InputBudgetHits + c.TimeBudgetHits }
	if !reactortest.WaitFor(time.Second, func() bool { return hits() > 0 }) { // counters are published a round late
		c := r.Stats().Counters
		return fmt.Errorf("4 MiB served without a budget ending any turn (bytes in %d)", c.BytesIn)
	}
	return nil
}

// detectAcceptStorm (R3; the reactor comes unstarted): 32 connections
// complete their handshakes before the reactor runs, so they wait in the
// listen backlog together, as a storm of simultaneous connects does; once
// it starts, each must be accepted and its PING answered within 2 s.
func detectAcceptStorm(r *reactors.Reactor) error {
	const n = 32
	cs := make([]*reactortest.Client, 0, n)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	r.Start()
	errs := make(chan error, n)
	for i, c := range cs {
		go func() {
			if err := c.Send(wire.KindPing, 5, uint64(i), nil); err != nil {
				errs <- err
				return
			}
			_, _, err := c.Recv(2 * time.Second)
			errs <- err
		}()
	}
	stuck := 0
	var first error
	for range cs {
		if err := <-errs; err != nil {
			stuck++
			first = cmp.Or(first, err)
		}
	}
	if stuck > 0 {
		return fmt.Errorf("accept storm: %d of %d connections never served (accepted %d): %v", stuck, n, r.Stats().Counters.ConnsAccepted, first)
	}
	return nil
}

// detectEMFILEBusyLoop (R4; isolated: it lowers the child process's
// descriptor limit to 64, as TestEMFILEChild does): 80 connections arrive
// at a reactor that can hold about 45. Once accept has failed with EMFILE
// the loop must go idle (deadline timers: no epoll_wait at all) instead of
// spinning on a listener that stays readable.
func detectEMFILEBusyLoop(t testing.TB, design reactors.DesignName, cfg reactors.Config) error {
	// Start the runtime's own poller while descriptors are still available.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
	}
	// Client sockets are made now, above the limit to come: connect(2)
	// needs no new descriptor, accept(2) on the reactor's side does.
	const clients, limit = 80, 64
	fds := make([]int, 0, clients)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i := 0; i < clients; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Dup3(fd, 500+i, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fds = append(fds, 500+i)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	r := reactortest.Start(t, design, cfg)
	ap := r.Addr()
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	for _, fd := range fds {
		if err := unix.Connect(fd, sa); err != nil {
			t.Fatalf("connect: %v", err)
		}
	}
	if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.AcceptEMFILE > 0 }) {
		t.Fatalf("no EMFILE seen (%+v): the limit did not bite, the test proves nothing", r.Stats().Counters)
	}
	if !reactortest.Settled(r, 20*time.Millisecond, time.Second) {
		c := r.Stats().Counters
		return fmt.Errorf("after EMFILE the loop never went idle: %d epoll_waits, %d EMFILE, accepted %d, shed %d",
			c.EpollWaits, c.AcceptEMFILE, c.ConnsAccepted, c.ConnsRefused)
	}
	// Idle with deadline timers means no epoll_wait at all; allow 3 for the
	// window's edges. A spinning loop makes thousands a millisecond, but the
	// Go scheduler can hold its locked thread for tens of milliseconds on a
	// loaded machine (Settled may pass then), hence a long window, left as
	// soon as the loop is seen spinning.
	const window = time.Second
	c0 := r.Stats().Counters
	var rus0, rus1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &rus0)
	for start := time.Now(); time.Since(start) < window; {
		time.Sleep(10 * time.Millisecond) // observing a counter over a window: no event exists for "idle"
		if waits := r.Stats().Counters.EpollWaits - c0.EpollWaits; waits > 3 {
			return fmt.Errorf("after EMFILE the loop is not idle: %d epoll_waits in %v", waits, time.Since(start).Round(time.Millisecond))
		}
	}
	unix.Getrusage(unix.RUSAGE_SELF, &rus1)
	if cpu := time.Duration(rus1.Utime.Nano() + rus1.Stime.Nano() - rus0.Utime.Nano() - rus0.Stime.Nano()); cpu > window/10 {
		return fmt.Errorf("after EMFILE the process is not idle: %v CPU in %v", cpu, window)
	}
	return nil
}
