//go:build linux

package reactors_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// faultHookCase is one row of TestFaultHooksChangeBehaviour: a detector
// run against the correct reactor and against the mutant.
type faultHookCase struct {
	name   string
	design reactors.Design
	setup  func(*reactors.Config)
	fault  string
	detect func(*reactors.Reactor) error
	// unstarted: detect gets the reactor before Start, and starts it.
	unstarted bool
	// isolated replaces detect: it runs in a child process
	// (TestFaultHookChild), where it may lower the descriptor limit, and
	// builds and stops its own reactor there.
	isolated func(t testing.TB, design reactors.Design, cfg reactors.Config) error
}

// config is the row's configuration for the correct reactor or the mutant.
func (tc faultHookCase) config(t testing.TB, mutant bool) reactors.Config {
	cfg := reactors.DefaultConfig()
	if tc.setup != nil {
		tc.setup(&cfg)
	}
	if mutant {
		if err := reactors.ParseFault(tc.fault, &cfg.Faults); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

func faultHookCases() []faultHookCase {
	cases := []faultHookCase{
		{name: "no-frame-limit", design: reactors.LT, fault: "no-frame-limit", detect: detectOverSize},
		{name: "permanent-epollout", design: reactors.LT, setup: deadlineTimers, fault: "permanent-epollout", detect: detectIdleBusyLoop},
		{name: "unbounded-outq", design: reactors.LT, fault: "unbounded-outq", detect: detectSlowConsumer},
		{name: "missed-rearm", design: reactors.OneShot, fault: "missed-rearm:every=3", detect: detectStall},
		{name: "no-drain", design: reactors.ET, fault: "no-drain", detect: detectBurstStall},
		{name: "lost-wakeup", design: reactors.LT, setup: offloadTinyIngress, fault: "lost-wakeup", detect: detectBurstStall},
		{name: "no-budget", design: reactors.LT, fault: "no-budget", detect: detectUnbudgetedTurn},
	}
	// The hooks below sit in code every design shares; each is proven on
	// the designs whose paths around it differ (ET's ready queue, ONESHOT's
	// workers and rearm, prio's control bucket, prio-thread's second loop),
	// on all of them where that is cheap.
	for _, d := range reactors.Designs {
		cases = append(cases,
			faultHookCase{name: "drop-partial/" + string(d), design: d, fault: "drop-partial", detect: detectSplitFrames},
			faultHookCase{name: "limit-off-by-one/" + string(d), design: d, setup: frameLimit100k, fault: "limit-off-by-one", detect: detectFrameLimitEdge},
		)
	}
	// ET and prio accept exactly as LT does (one loop, a level-triggered
	// listener); ONESHOT rearms its listener, prio-thread has two loops.
	for _, d := range []reactors.Design{reactors.LT, reactors.OneShot, reactors.PrioThread} {
		cases = append(cases, faultHookCase{name: "accept-once-et/" + string(d), design: d, fault: "accept-once-et", detect: detectAcceptStorm, unstarted: true})
	}
	for _, d := range []reactors.Design{reactors.LT, reactors.ET, reactors.OneShot} {
		cases = append(cases, faultHookCase{name: "drop-short-write/" + string(d), design: d, setup: bigOutQueue, fault: "drop-short-write", detect: detectShortWrites})
	}
	for _, d := range []reactors.Design{reactors.LT, reactors.OneShot} {
		cases = append(cases, faultHookCase{name: "no-emfile-shed/" + string(d), design: d, setup: deadlineTimers, fault: "no-emfile-shed", isolated: detectEMFILEBusyLoop})
	}
	cases = append(cases,
		faultHookCase{name: "leak-pending/lt", design: reactors.LT, setup: smallOutQueueSlowOffload, fault: "leak-pending", detect: detectLeakPending},
		faultHookCase{name: "leak-pending/oneshot", design: reactors.OneShot, setup: smallOutQueue, fault: "leak-pending", detect: detectLeakPending},
	)
	for _, d := range []reactors.Design{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread} {
		cases = append(cases, faultHookCase{name: "silent-after-stop/" + string(d), design: d, fault: "silent-after-stop", detect: detectSilentAfterStop})
	}
	cases = append(cases, faultHookCase{name: "silent-after-stop/oneshot", design: reactors.OneShot, setup: stopDuringCallback, fault: "silent-after-stop", detect: detectSilentAfterStopBusy})
	// EOF is read on the path every design shares, but each reaches it
	// from its own turn scheduling: prove both ways of losing echoes on
	// all of them.
	for _, d := range reactors.Designs {
		cases = append(cases,
			faultHookCase{name: "free-at-eof/queued/" + string(d), design: d, fault: "free-at-eof", detect: detectEOFWithQueuedEchoes},
			faultHookCase{name: "free-at-eof/same-turn/" + string(d), design: d, fault: "free-at-eof", detect: detectEOFInEchoingTurn, unstarted: true},
		)
	}
	// Not oneshot: its other worker thread serves everyone else while one
	// spins (faults.FlushSpinAtEOF).
	for _, d := range []reactors.Design{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread} {
		cases = append(cases, faultHookCase{name: "flush-spin-at-eof/" + string(d), design: d, fault: "flush-spin-at-eof", detect: detectFlushSpinAtEOF})
	}
	return cases
}

// Each reactor fault hook must turn a correct reactor into one that a
// simple detector catches, and the same detector must pass the correct
// reactor. (The conformance suite has the full cases; this proves the
// hooks are live.)
func TestFaultHooksChangeBehaviour(t *testing.T) {
	for _, tc := range faultHookCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, mutant := range []bool{false, true} {
				var err error
				switch {
				case tc.isolated != nil:
					err = runIsolatedFaultHook(t, tc.name, mutant)
				case tc.unstarted:
					err = tc.detect(newUnstarted(t, tc.design, tc.config(t, mutant)))
				default:
					err = tc.detect(reactortest.Start(t, tc.design, tc.config(t, mutant)))
				}
				switch {
				case !mutant && err != nil:
					t.Fatalf("correct %s flagged: %v", tc.design, err)
				case mutant && err == nil:
					t.Fatalf("mutant %s (%s) not detected", tc.design, tc.fault)
				case mutant:
					t.Logf("mutant detected: %v", err)
				}
			}
		})
	}
}

// newUnstarted builds a reactor without starting it, and makes sure it is
// stopped (or closed, if it never started) when the test ends.
func newUnstarted(t testing.TB, design reactors.Design, cfg reactors.Config) *reactors.Reactor {
	t.Helper()
	r, err := designs.New(design, cfg)
	if err != nil {
		t.Fatalf("new %s: %v", design, err)
	}
	t.Cleanup(func() {
		if _, err := r.Stop(); err != nil {
			t.Errorf("stop %s: %v", design, err)
		}
		if _, err := r.Wait(); err != nil {
			t.Errorf("wait %s: %v", design, err)
		}
	})
	return r
}

const faultHookChildEnv = "REACTORLAB_FAULTHOOK_CHILD"

// faultHookVerdict starts the line on which TestFaultHookChild reports.
const faultHookVerdict = "fault hook verdict: "

// runIsolatedFaultHook runs row name's isolated detector in a child process
// (like TestEMFILE) and returns the error it reported.
func runIsolatedFaultHook(t *testing.T, name string, mutant bool) error {
	t.Helper()
	mode := "correct"
	if mutant {
		mode = "mutant"
	}
	out := runChild(t, "^TestFaultHookChild$", faultHookChildEnv+"="+name+","+mode, 30*time.Second)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, faultHookVerdict); ok {
			if v == "ok" {
				return nil
			}
			return errors.New(v)
		}
	}
	t.Fatalf("child (%s) gave no verdict:\n%s", mode, out)
	return nil
}

// TestFaultHookChild runs one isolated row of TestFaultHooksChangeBehaviour
// in the child process that runIsolatedFaultHook starts, and prints the
// detector's verdict.
func TestFaultHookChild(t *testing.T) {
	spec := os.Getenv(faultHookChildEnv)
	if spec == "" {
		t.Skip("runs only as TestFaultHooksChangeBehaviour's child process")
	}
	name, mode, _ := strings.Cut(spec, ",")
	for _, tc := range faultHookCases() {
		if tc.name == name && tc.isolated != nil {
			if err := tc.isolated(t, tc.design, tc.config(t, mode == "mutant")); err != nil {
				fmt.Printf("%s%v\n", faultHookVerdict, err)
			} else {
				fmt.Printf("%sok\n", faultHookVerdict)
			}
			return
		}
	}
	t.Fatalf("no isolated row %q", name)
}

func deadlineTimers(c *reactors.Config) { c.Timer = reactors.TimerDeadline }

// offloadTinyIngress makes worker results queue up beyond one ingress
// budget, with no periodic tick to paper over a lost wakeup.
func offloadTinyIngress(c *reactors.Config) {
	c.Timer = reactors.TimerDeadline
	c.Workers = 2
	c.Budgets.Ingress = 4
}

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
	h, reason, err := bad.Recv(2 * time.Second)
	if err != nil || h.Kind != wire.KindReject {
		return fmt.Errorf("over-size header: got %v %q %v, want REJECT", h.Kind, reason, err)
	}
	if _, _, err := bad.Recv(2 * time.Second); !errors.Is(err, io.EOF) {
		return fmt.Errorf("after REJECT: %v, want EOF", err)
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

// detectIdleBusyLoop: ten connections, each echoed once, then idle. With
// deadline timers and nothing due an idle loop makes no epoll_wait calls;
// allow 3 for the window's edges.
func detectIdleBusyLoop(r *reactors.Reactor) error {
	for i := 0; i < 10; i++ {
		c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.Send(wire.KindData, 1, 1, []byte("x")); err != nil {
			return err
		}
		if _, _, err := c.Recv(5 * time.Second); err != nil {
			return err
		}
	}
	// Let the last rounds finish and be published (a busy-looping mutant
	// never settles).
	if !reactortest.Settled(r, 20*time.Millisecond, 2*time.Second) {
		c := r.Stats().Counters
		return fmt.Errorf("never idle: %d epoll_waits, %d EPOLLOUT events with an empty queue", c.EpollWaits, c.EpolloutEmpty)
	}
	w0 := r.Stats().Counters
	time.Sleep(200 * time.Millisecond) // a measurement window
	w1 := r.Stats().Counters
	if waits := w1.EpollWaits - w0.EpollWaits; waits > 3 {
		return fmt.Errorf("idle: %d epoll_waits in 200 ms (%d zero-timeout, %d blocking, %d idle wakeups; events %d: in %d, out %d with empty queue %d, err %d; timers %d, ingress %d)",
			waits, w1.ZeroTimeoutWaits-w0.ZeroTimeoutWaits, w1.BlockingWaits-w0.BlockingWaits, w1.IdleWakeups-w0.IdleWakeups,
			w1.Events-w0.Events, w1.EventsIn-w0.EventsIn, w1.EventsOut-w0.EventsOut, w1.EpolloutEmpty-w0.EpolloutEmpty,
			w1.EventsErr-w0.EventsErr, w1.TimersFired-w0.TimersFired, w1.IngressItems-w0.IngressItems)
	}
	return nil
}

// detectSlowConsumer: a client that writes without reading; the reactor
// must stop reading once the out-queue passes the high watermark, holding
// at most high watermark + one turn's bytes + two frames; after the client
// resumes, every echo arrives intact and in order.
func detectSlowConsumer(r *reactors.Reactor) error {
	cfg := r.Config()
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	const payload = 4096
	frame := make([]byte, payload)
	var buf []byte
	var sent uint64
	for {
		reactortest.Payload(frame, 1, sent)
		buf = wire.AppendFrame(buf[:0], wire.KindData, 0, 1, sent, 0, frame)
		c.Conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Conn.Write(buf); err != nil {
			if reactortest.IsTimeout(err) {
				break // kernel buffers full: the reactor stopped reading
			}
			return err
		}
		sent++
		if sent*payload > 64<<20 {
			return fmt.Errorf("wrote %d MiB without blocking: the reactor never stopped reading", sent*payload>>20)
		}
	}
	st := r.Stats().Counters
	held := int64(st.BytesIn) - int64(st.BytesOut)
	bound := int64(cfg.OutHigh + cfg.Budgets.Bytes + 2*(payload+wire.HeaderSize))
	if st.BackpressureOn == 0 || held > bound {
		return fmt.Errorf("backpressure pauses %d; reactor holds %d bytes, bound %d", st.BackpressureOn, held, bound)
	}
	c.Conn.SetWriteDeadline(time.Time{})
	want := make([]byte, payload)
	for seq := uint64(0); seq < sent; seq++ {
		h, p, err := c.Recv(10 * time.Second)
		if err != nil {
			return fmt.Errorf("echo %d of %d: %w", seq, sent, err)
		}
		reactortest.Payload(want, 1, seq)
		if h.Seq != seq || !bytes.Equal(p, want) {
			return fmt.Errorf("echo %d: got seq %d, payload intact %v", seq, h.Seq, bytes.Equal(p, want))
		}
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
	var burst []byte
	p := make([]byte, size)
	for i := 0; i < n; i++ {
		reactortest.Payload(p, 1, uint64(i))
		burst = wire.AppendFrame(burst, wire.KindData, 0, 1, uint64(i), 0, p)
	}
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

// frameLimit100k sets a frame limit that is neither a power of two nor a
// buffer size.
func frameLimit100k(c *reactors.Config) { c.MaxFrame = 100_000 }

// bigOutQueue lets the out-queue hold more than the kernel's socket buffers
// (some 4 MiB on loopback here) without backpressure.
func bigOutQueue(c *reactors.Config) { c.OutHigh, c.OutLow, c.OutCap = 64<<20, 1<<20, 128<<20 }

// smallOutQueue makes a client that does not read fill the out-queue past
// the high watermark quickly.
func smallOutQueue(c *reactors.Config) { c.OutHigh, c.OutLow = 64<<10, 16<<10 }

// smallOutQueueSlowOffload adds one pool worker with 500 ms callbacks, so a
// callback is still in flight when its connection dies.
func smallOutQueueSlowOffload(c *reactors.Config) {
	smallOutQueue(c)
	c.Workers, c.Callback = 1, "500ms"
}

// stopDuringCallback (ONESHOT): 500 ms callbacks run inline on the
// workers, and each epoll_wait returns one event, so a STOP is taken by one
// worker while the other is inside a callback.
func stopDuringCallback(c *reactors.Config) { c.Callback, c.MaxEvents = "500ms", 1 }

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
	var stream []byte
	p := make([]byte, size)
	for i := 0; i < n; i++ {
		reactortest.Payload(p, 1, uint64(i))
		stream = wire.AppendFrame(stream, wire.KindData, 0, 1, uint64(i), 0, p)
	}
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
	for i := 0; i < n; i++ {
		h, got, err := c.Recv(2 * time.Second)
		reactortest.Payload(p, 1, uint64(i))
		if err != nil || h.Kind != wire.KindData || h.Seq != uint64(i) || !bytes.Equal(got, p) {
			return fmt.Errorf("split frames: echo %d: got %v seq %d, %d bytes (intact %v), %v", i, h.Kind, h.Seq, len(got), bytes.Equal(got, p), err)
		}
	}
	return nil
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
	if h, reason, err := over.Recv(2 * time.Second); err != nil || h.Kind != wire.KindReject {
		return fmt.Errorf("header declaring %d bytes (limit %d): got %v %q %v, want REJECT", limit+1, limit, h.Kind, reason, err)
	}
	if _, _, err := over.Recv(2 * time.Second); !errors.Is(err, io.EOF) {
		return fmt.Errorf("after REJECT: %v, want EOF", err)
	}
	return nil
}

// detectShortWrites (W3): DATA frames, 1 MiB at a time, from a client that
// reads nothing until the reactor's socket has stopped taking its echoes
// (the reactor holds 1 MiB more than it wrote: its writes came up short and
// the rest waits in the out-queue); then every echo must arrive intact and
// in order.
func detectShortWrites(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	const perChunk, size, maxChunks = 16, 64 << 10, 48
	var chunk []byte
	p := make([]byte, size)
	c0 := r.Stats().Counters
	c.Conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	n, sent := 0, uint64(0)
	for {
		chunk = chunk[:0]
		for i := 0; i < perChunk; i++ {
			reactortest.Payload(p, 4, uint64(n+i))
			chunk = wire.AppendFrame(chunk, wire.KindData, 0, 4, uint64(n+i), 0, p)
		}
		if _, err := c.Conn.Write(chunk); err != nil {
			return fmt.Errorf("short writes: writing frames %d..%d: %w", n, n+perChunk-1, err)
		}
		n += perChunk
		sent += uint64(len(chunk))
		var held uint64
		if !reactortest.WaitFor(2*time.Second, func() bool {
			c := r.Stats().Counters
			held = (c.BytesIn - c0.BytesIn) - (c.BytesOut - c0.BytesOut)
			return c.BytesIn-c0.BytesIn >= sent
		}) {
			return fmt.Errorf("short writes: the reactor read %d of %d bytes", r.Stats().Counters.BytesIn-c0.BytesIn, sent)
		}
		if held >= 1<<20 {
			break
		}
		if n >= perChunk*maxChunks {
			return fmt.Errorf("short writes: the socket took %d bytes of echoes unread: no short write happened, the test proves nothing", sent-held)
		}
	}
	for i := 0; i < n; i++ {
		h, got, err := c.Recv(2 * time.Second)
		reactortest.Payload(p, 4, uint64(i))
		if err != nil || h.Kind != wire.KindData || h.Seq != uint64(i) || !bytes.Equal(got, p) {
			return fmt.Errorf("short writes: echo %d of %d: got %v seq %d, %d bytes (intact %v), %v", i, n, h.Kind, h.Seq, len(got), bytes.Equal(got, p), err)
		}
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
func detectEMFILEBusyLoop(t testing.TB, design reactors.Design, cfg reactors.Config) error {
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

// detectLeakPending (I2): connections reset by their peers while work is
// pending for them (one with its out-queue above the high watermark: PINGs
// it never read; with a worker pool, one with a callback in flight) must be
// closed: ConnsClosed counts them and the process's descriptors return to
// what they were.
func detectLeakPending(r *reactors.Reactor) error {
	fds0 := reactortest.TakeLeaks().Fds
	c0 := r.Stats().Counters
	dying := 0

	full, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer full.Close()
	go func() { // PINGs until the reset below (or 64 MiB): never reads the echoes
		frame := wire.AppendFrame(nil, wire.KindPing, 0, 6, 0, 0, make([]byte, 16<<10))
		full.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		for i := 0; i < 4096; i++ {
			if _, err := full.Conn.Write(frame); err != nil {
				return
			}
		}
	}()
	if !reactortest.WaitFor(2*time.Second, func() bool { return r.Stats().Counters.BackpressureOn > c0.BackpressureOn }) {
		return fmt.Errorf("leak: the out-queue never reached the high watermark (%+v)", r.Stats().Counters)
	}
	full.Conn.(*net.TCPConn).SetLinger(0) // close with RST
	full.Close()
	dying++

	if r.Config().Workers > 0 {
		busy, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer busy.Close()
		if err := busy.Send(wire.KindData, 7, 0, []byte("in flight")); err != nil {
			return err
		}
		if !reactortest.WaitFor(2*time.Second, func() bool { return r.Stats().Counters.TasksOffloaded > c0.TasksOffloaded }) {
			return fmt.Errorf("leak: the DATA frame was never offloaded")
		}
		busy.Conn.(*net.TCPConn).SetLinger(0)
		busy.Close()
		dying++
	}
	if !reactortest.WaitFor(2*time.Second, func() bool {
		return r.Stats().Counters.ConnsClosed >= c0.ConnsClosed+uint64(dying) && reactortest.TakeLeaks().Fds <= fds0
	}) {
		return fmt.Errorf("leak: %d connections reset with work pending, %d closed; descriptors %d before, %d now",
			dying, r.Stats().Counters.ConnsClosed-c0.ConnsClosed, fds0, reactortest.TakeLeaks().Fds)
	}
	return nil
}

// detectSilentAfterStop (X2): STOP and, behind it in the same write, a DATA
// frame on a control connection. The DATA is read after the stop was
// requested: it must be answered with REJECT before STOP_ACK, whose ledger
// counts it as accepted and rejected.
func detectSilentAfterStop(r *reactors.Reactor) error {
	ctl, err := reactortest.Dial(r.ControlAddr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer ctl.Close()
	b := wire.AppendFrame(nil, wire.KindStop, 0, 8, 1, reactortest.MonoNow(), nil)
	b = wire.AppendFrame(b, wire.KindData, 0, 8, 2, 0, []byte("after STOP"))
	if _, err := ctl.Conn.Write(b); err != nil {
		return err
	}
	rejected := false
	for {
		h, p, err := ctl.Recv(2 * time.Second)
		if err != nil {
			return fmt.Errorf("after STOP (REJECT seen: %v): %w", rejected, err)
		}
		switch {
		case h.Kind == wire.KindReject && h.Seq == 2:
			rejected = true
		case h.Kind == wire.KindStopAck:
			return checkStopAck(p, rejected, 1)
		default:
			return fmt.Errorf("after STOP: unexpected %v seq %d", h.Kind, h.Seq)
		}
	}
}

// checkStopAck checks a STOP_ACK ledger after a DATA frame sent after the
// STOP, which must have been refused (rejected) and counted: accepted
// frames in all, balanced, at least one rejected.
func checkStopAck(payload []byte, rejected bool, accepted uint64) error {
	led, err := wire.DecodeLedger(payload)
	if err != nil {
		return err
	}
	if !rejected || !led.Balanced() || led.Accepted != accepted || led.Rejected == 0 {
		return fmt.Errorf("DATA after STOP: REJECT sent %v; STOP_ACK ledger %+v, want %d accepted, balanced, >= 1 rejected", rejected, led, accepted)
	}
	return nil
}

// detectSilentAfterStopBusy (X2, for ONESHOT, where a STOP holds its own
// connection unread until STOP_ACK, so the DATA must come on another): two
// DATA frames in one write; while a worker runs the first one's callback,
// STOP arrives on a control connection and the other worker takes it. The
// second frame is handled after the stop was requested: it must be
// answered with REJECT (the first with its echo, or REJECT if the stop came
// first), and STOP_ACK's ledger must count both.
func detectSilentAfterStopBusy(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	ctl, err := reactortest.Dial(r.ControlAddr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer ctl.Close()
	// Both must be accepted before the stop (ONESHOT closes connections
	// accepted after it): a PING answered proves it.
	for _, cl := range []*reactortest.Client{c, ctl} {
		if err := cl.Send(wire.KindPing, 9, 0, nil); err != nil {
			return err
		}
		if _, _, err := cl.Recv(2 * time.Second); err != nil {
			return fmt.Errorf("PING before STOP: %w", err)
		}
	}
	b := wire.AppendFrame(nil, wire.KindData, 0, 9, 1, 0, []byte("first"))
	b = wire.AppendFrame(b, wire.KindData, 0, 9, 2, 0, []byte("second"))
	if _, err := c.Conn.Write(b); err != nil {
		return err
	}
	if err := ctl.Send(wire.KindStop, 9, 1, nil); err != nil {
		return err
	}
	rejected := false
	for seq := uint64(1); seq <= 2; seq++ {
		h, _, err := c.Recv(2 * time.Second)
		if err != nil {
			return fmt.Errorf("DATA %d, sent before STOP, handled after it: no answer: %w", seq, err)
		}
		if h.Seq != seq || (h.Kind != wire.KindReject && (seq == 2 || h.Kind != wire.KindData)) {
			return fmt.Errorf("DATA %d: got %v seq %d, want REJECT", seq, h.Kind, h.Seq)
		}
		rejected = rejected || h.Kind == wire.KindReject
	}
	h, p, err := ctl.Recv(2 * time.Second)
	if err != nil || h.Kind != wire.KindStopAck {
		return fmt.Errorf("waiting for STOP_ACK: got %v %v", h.Kind, err)
	}
	return checkStopAck(p, rejected, 2)
}

// dialSmallReceiveBuffer connects to addr with a 4 KiB receive buffer set
// before the handshake (so the window it advertises is small too): the
// echoes it does not read back up in the server sooner.
func dialSmallReceiveBuffer(addr string) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return os.NewSyscallError("setsockopt SO_RCVBUF", serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return c.(*net.TCPConn), nil
}

// dataFrames returns n DATA frames of size bytes each (token 11, seq
// from first), as one stream.
func dataFrames(first, n, size int) []byte {
	var stream []byte
	p := make([]byte, size)
	for i := first; i < first+n; i++ {
		reactortest.Payload(p, 11, uint64(i))
		stream = wire.AppendFrame(stream, wire.KindData, 0, 11, uint64(i), 0, p)
	}
	return stream
}

// readEchoesToEOF reads c until EOF (or timeout) and checks that it
// received exactly sent, in order, before the EOF.
func readEchoesToEOF(c net.Conn, sent []byte, timeout time.Duration) error {
	c.SetReadDeadline(time.Now().Add(timeout))
	got, err := io.ReadAll(c)
	switch {
	case err != nil:
		return fmt.Errorf("after the half-close: %d of %d bytes echoed, then %w", len(got), len(sent), err)
	case !bytes.Equal(got, sent):
		return fmt.Errorf("after the half-close: %d of %d bytes echoed before EOF (intact prefix %v)", len(got), len(sent), bytes.HasPrefix(sent, got))
	}
	return nil
}

// queueEchoes sends DATA frames on c (a client with a small receive
// buffer that reads nothing), 64 KiB at a time, until the reactor has read
// them all and holds at least 256 KiB of their echoes in its out-queue
// (the kernel's buffers took the rest; the default high watermark, 1 MiB,
// is not reached, so the reactor goes on reading). It returns what it sent.
func queueEchoes(r *reactors.Reactor, c net.Conn) ([]byte, error) {
	const perChunk, size, maxSent, queued = 16, 4 << 10, 16 << 20, 256 << 10
	c0 := r.Stats().Counters
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	var sent []byte
	for n := 0; ; n += perChunk {
		chunk := dataFrames(n, perChunk, size)
		if _, err := c.Write(chunk); err != nil {
			return nil, fmt.Errorf("queueing echoes: writing frames %d..%d: %w", n, n+perChunk-1, err)
		}
		sent = append(sent, chunk...)
		var held uint64
		if !reactortest.WaitFor(2*time.Second, func() bool {
			c := r.Stats().Counters
			held = (c.BytesIn - c0.BytesIn) - (c.BytesOut - c0.BytesOut)
			return c.BytesIn-c0.BytesIn >= uint64(len(sent))
		}) {
			return nil, fmt.Errorf("queueing echoes: the reactor read %d of %d bytes", r.Stats().Counters.BytesIn-c0.BytesIn, len(sent))
		}
		if held >= queued {
			return sent, nil
		}
		if len(sent) >= maxSent {
			return nil, fmt.Errorf("queueing echoes: the kernel took all %d bytes of echoes unread: nothing was queued, the test proves nothing", len(sent))
		}
	}
}

// detectEOFWithQueuedEchoes (I3): a client with a small receive buffer
// has the reactor queue echoes it does not read (queueEchoes), then
// shuts down its write side and reads: every echo must arrive, then EOF.
func detectEOFWithQueuedEchoes(r *reactors.Reactor) error {
	c, err := dialSmallReceiveBuffer(r.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	sent, err := queueEchoes(r, c)
	if err != nil {
		return err
	}
	if err := c.CloseWrite(); err != nil {
		return err
	}
	return readEchoesToEOF(c, sent, 10*time.Second)
}

// detectEOFInEchoingTurn (I3; the reactor comes unstarted): a client
// sends four DATA frames and shuts down its write side before the reactor
// runs, so the reactor's first turn on the connection reads the frames
// and the EOF together, queueing the echoes in the same turn that sees
// the EOF; every echo must arrive, then EOF.
func detectEOFInEchoingTurn(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	sent := dataFrames(0, 4, 4<<10)
	if _, err := c.Conn.Write(sent); err != nil {
		return err
	}
	if err := c.Conn.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	r.Start()
	return readEchoesToEOF(c.Conn, sent, 5*time.Second)
}

// detectFlushSpinAtEOF (W4): client A, with a small receive buffer, has
// the reactor queue echoes it does not read (queueEchoes: some 3 MiB
// sent, 256 KiB or more queued) and shuts down its write side: the
// reactor reads the EOF with echoes queued for a peer that does not read.
// Then three PING round trips of client B must each be answered within
// 1 s: A's bytes were all read before its FIN, which keeps A readable, so
// the reactor reads A's EOF in the first round that can serve B's PING,
// or the next. Closing A at the end resets it, which ends a mutant's spin.
func detectFlushSpinAtEOF(r *reactors.Reactor) error {
	c0 := r.Stats().Counters
	a, err := dialSmallReceiveBuffer(r.Addr().String())
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := queueEchoes(r, a); err != nil {
		return err
	}
	if err := a.CloseWrite(); err != nil {
		return err
	}
	b, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer b.Close()
	for seq := uint64(0); seq < 3; seq++ {
		if err := b.Send(wire.KindPing, 12, seq, nil); err != nil {
			return err
		}
		if _, _, err := b.Recv(time.Second); err != nil {
			return fmt.Errorf("flush spin: client B's PING %d unanswered in 1 s while half-closed A, with echoes queued, does not read: %w", seq, err)
		}
	}
	st := r.Stats().Counters
	if held := (st.BytesIn - c0.BytesIn) - (st.BytesOut - c0.BytesOut); held == 0 {
		return fmt.Errorf("flush spin: A's echoes all left the out-queue: nothing was queued at its EOF, the test proves nothing")
	}
	return nil
}

// The flush-spin-at-eof mutant must still stop when asked while it spins
// for a half-closed peer that neither reads nor goes away, so a test can
// always end it: Stop returns (the spin checks for a requested stop).
func TestFlushSpinAtEOFStops(t *testing.T) {
	for _, d := range []reactors.Design{reactors.LT, reactors.PrioThread} {
		t.Run(string(d), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Faults.FlushSpinAtEOF = true
			r := reactortest.Start(t, d, cfg)
			a, err := dialSmallReceiveBuffer(r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close() // if Stop hangs, this reset ends the spin and so the Stop
			if _, err := queueEchoes(r, a); err != nil {
				t.Fatal(err)
			}
			if err := a.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			b, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Send(wire.KindPing, 13, 0, nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.Recv(500 * time.Millisecond); !reactortest.IsTimeout(err) {
				t.Fatalf("the mutant is not spinning (a PING on another connection got %v): the test proves nothing", err)
			}
			stopped := make(chan error, 1)
			go func() {
				_, err := r.Stop()
				stopped <- err
			}()
			select {
			case err := <-stopped:
				if err != nil {
					t.Fatalf("stop: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Stop did not return within 5 s while the mutant spun for a peer that does not read")
			}
		})
	}
}
