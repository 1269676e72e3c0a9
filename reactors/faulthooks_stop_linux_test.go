//go:build linux

package reactors_test

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// The fault-hook detectors of identity and stop (faulthooks_linux_test.go
// has the rows): results and closes with work pending (I1, I2), STOP under
// load and the work behind it (X1, X2).

// detectStaleResult (I1; one pool worker, 100 ms callbacks): a DATA frame
// is offloaded, its connection is reset and a new one accepted, which gets
// the same fd number; the worker's result, due after the reset, must be
// dropped and counted stale, never delivered to the newcomer.
func detectStaleResult(r *reactors.Reactor) error {
	// The newcomer gets the old fd only if no other descriptor of this
	// process (the test's own client sockets share its fd table, and Go
	// closes one only when no call is using it) takes the number first:
	// most attempts, not every one (1 in 10 missed it at a load average
	// of 4). A correct reactor must pass every attempt; a mutant shows in
	// any attempt whose newcomer took the fd.
	for range 3 {
		if err := staleResultOnce(r); err != nil {
			return err
		}
	}
	return nil
}

// staleResultOnce is one attempt of detectStaleResult.
func staleResultOnce(r *reactors.Reactor) error {
	c0 := r.Stats().Counters
	old, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer old.Close()
	if err := old.Send(wire.KindData, 1, 1, []byte("for the old connection")); err != nil {
		return err
	}
	if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.TasksOffloaded > c0.TasksOffloaded }) {
		return fmt.Errorf("stale result: the frame was never offloaded")
	}
	// Reset, not FIN: an orderly close is a half-close the reactor must
	// still answer; a reset ends the connection at once.
	old.Conn.(*net.TCPConn).SetLinger(0)
	old.Close()
	if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.ConnsClosed > c0.ConnsClosed }) {
		return fmt.Errorf("stale result: the reset was never observed")
	}
	fresh, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer fresh.Close()
	// The result is due 100 ms after the offload: wait until the reactor
	// has handled it (dropped or delivered), then look.
	if !reactortest.WaitFor(5*time.Second, func() bool {
		c := r.Stats().Counters
		return c.StaleResults+c.FramesEchoed > c0.StaleResults+c0.FramesEchoed
	}) {
		return fmt.Errorf("stale result: the worker's result was never handled")
	}
	if h, p, err := fresh.Recv(200 * time.Millisecond); err == nil {
		return fmt.Errorf("stale result: the new connection received %v seq %d %q, meant for the closed one", h.Kind, h.Seq, p)
	} else if !reactortest.IsTimeout(err) {
		return err
	}
	if !reactortest.WaitFor(2*time.Second, func() bool { return r.Stats().Counters.StaleResults > c0.StaleResults }) {
		return fmt.Errorf("stale result: dropped but not counted (stale_results %d)", r.Stats().Counters.StaleResults)
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

// detectStopUnderLoad (X1; frames that cost CPU, so the reactor always has
// work waiting): a client writes small DATA frames without pause and reads
// every echo; 200 echoes into the load, a STOP on a control connection
// must be answered with STOP_ACK within 2 s while the load goes on (a
// correct loop looks for a requested stop every round).
func detectStopUnderLoad(r *reactors.Reactor) error {
	hot, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	var load sync.WaitGroup
	defer load.Wait()
	defer hot.Close() // ends both goroutines below
	hot.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	load.Add(2)
	go func() { // the load: until the connection fails or closes
		defer load.Done()
		burst := dataFrames(14, 0, 512, 64)
		for {
			if _, err := hot.Conn.Write(burst); err != nil {
				return
			}
		}
	}()
	go func() { defer load.Done(); io.Copy(io.Discard, hot.Conn) }()
	c0 := r.Stats().Counters
	if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.FramesEchoed >= c0.FramesEchoed+200 }) {
		return fmt.Errorf("stop under load: the load never got going (%d frames echoed)", r.Stats().Counters.FramesEchoed-c0.FramesEchoed)
	}
	ctl, err := reactortest.Dial(r.ControlAddr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if err := ctl.Send(wire.KindStop, 14, 1, nil); err != nil {
		return err
	}
	for deadline := time.Now().Add(2 * time.Second); ; {
		h, _, err := ctl.Recv(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("stop under load: no STOP_ACK within 2 s (%d frames echoed under load): %w", r.Stats().Counters.FramesEchoed-c0.FramesEchoed, err)
		}
		if h.Kind == wire.KindStopAck {
			return nil
		}
	}
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
