//go:build linux

package reactors_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// Each reactor fault hook must turn a correct reactor into one that a
// simple detector catches, and the same detector must pass the correct
// reactor. (The conformance suite has the full cases; this proves the
// hooks are live.)
func TestFaultHooksChangeBehaviour(t *testing.T) {
	for _, tc := range []struct {
		name   string
		design reactors.Design
		setup  func(*reactors.Config)
		fault  string
		detect func(*reactors.Reactor) error
	}{
		{"no-frame-limit", reactors.LT, nil, "no-frame-limit", detectOverSize},
		{"permanent-epollout", reactors.LT, deadlineTimers, "permanent-epollout", detectIdleBusyLoop},
		{"unbounded-outq", reactors.LT, nil, "unbounded-outq", detectSlowConsumer},
		{"missed-rearm", reactors.OneShot, nil, "missed-rearm:every=3", detectStall},
		{"no-drain", reactors.ET, nil, "no-drain", detectBurstStall},
		{"lost-wakeup", reactors.LT, offloadTinyIngress, "lost-wakeup", detectBurstStall},
		{"no-budget", reactors.LT, nil, "no-budget", detectUnbudgetedTurn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mutant := range []bool{false, true} {
				cfg := reactors.DefaultConfig()
				if tc.setup != nil {
					tc.setup(&cfg)
				}
				if mutant {
					if err := reactors.ParseFault(tc.fault, &cfg.Faults); err != nil {
						t.Fatal(err)
					}
				}
				r := reactortest.Start(t, tc.design, cfg)
				err := tc.detect(r)
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
