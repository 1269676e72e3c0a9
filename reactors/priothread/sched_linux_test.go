//go:build linux

package priothread_test

import (
	"errors"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/priothread"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// startFIFO starts prio-thread with its control loop in SCHED_FIFO at
// priority 1 and cfg's other fields, or skips the test where the process
// may not grant a real-time class (New refuses it, naming the privilege).
func startFIFO(t *testing.T, cfg reactors.Config) *reactors.Reactor {
	t.Helper()
	cfg.ControlSched = "fifo:1"
	probe, err := priothread.New(cfg)
	if errors.Is(err, unix.EPERM) {
		t.Skipf("no real-time class here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	probe.Stop() // never started: releases its listeners
	return reactortest.Start(t, reactors.PrioThread, cfg)
}

// TestControlSchedIsInForce: the control loop's thread runs in the class
// asked for, as the kernel reports it, and the data loop's does not.
func TestControlSchedIsInForce(t *testing.T) {
	r := startFIFO(t, reactors.DefaultConfig())
	if got := r.LoopSched(); !slices.Equal(got, []string{"other", "fifo:1"}) {
		t.Fatalf("loop classes %q: want the data loop in other and the control loop in fifo:1", got)
	}
	if _, err := reactortest.StopFrame(r.ControlAddr().String(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.Wait(); !slices.Equal(st.LoopSched, []string{"other", "fifo:1"}) {
		t.Fatalf("final stats record loop classes %q", st.LoopSched)
	}
}

// TestRTHoldBoundsABusyControlLoop: a control loop in SCHED_FIFO that has
// work without pause (four control connections pipelining DATA frames of
// 100 µs each) shares one CPU with the data loop; it must not hold that
// CPU past its budget, and the data loop must go on answering.
//
// The budget arithmetic: the control loop checks its hold after each
// consume pass and each dispatched batch, each at most 4 sources × a turn
// ending at the first clock check past the 1 ms time budget (16 frames ×
// 100 µs): 6.4 ms, so it rests after at most RTHold (2 ms) + 6.4 ms; the
// bound on the longest stretch it reports (wall clock from waking or a
// rest to the next rest or blocking wait, so also time it was off the
// CPU, or stopped by the Go runtime) is 250 ms. Seen, 40 runs with the
// other core busy: 13-27 ms, and 51, 80 and 103 ms once each.
//
// The precondition, that the flood keeps the control loop busy at all, is
// shown by the same flood with RTHold at 1 s: that loop must report a
// stretch of at least 500 ms (the kernel's real-time throttling,
// sched_rt_runtime_us, lets it run 950 ms of every second here). The
// data loop's worst round trip is the outside view: under the guard it
// must stay under half that unguarded stretch. (It is not held to the
// arithmetic: the data loop shares the rests with every other
// time-sharing thread the kernel puts on that CPU; 13-270 ms were seen
// under load, against 320-1000 ms unguarded.)
func TestRTHoldBoundsABusyControlLoop(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs: the test's client must not share the reactor's CPU with a real-time thread")
	}
	// Loops + the test's own goroutines: a loop thread waking from
	// epoll_wait must find a P, or the Go scheduler, not the hold, decides
	// when the data loop runs.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	// The unguarded flood must outlast its first stretch (1 s) and the rest
	// that follows it (as long again), or Settled may read the counters
	// before the loop publishes that stretch: 2.5 s in both tiers. The
	// guarded loop rests every few ms, so with -short 1 s of flood holds
	// hundreds of its stretches, and a broken guard shows in the first (a
	// stretch of about the second the unguarded run shows).
	unguarded, unguardedHold := busyControlWorst(t, time.Second, 2500*time.Millisecond)
	t.Logf("rt-hold 1s: worst data round trip %v, longest stretch %v", unguarded, unguardedHold)
	if unguardedHold < 500*time.Millisecond {
		t.Fatalf("with rt-hold 1s the control loop ran %v at most without a pause: the flood did not keep it busy, so a guarded run would prove nothing", unguardedHold)
	}
	guardedFlood := 2500 * time.Millisecond
	if testing.Short() {
		guardedFlood = time.Second
	}
	guarded, guardedHold := busyControlWorst(t, 2*time.Millisecond, guardedFlood)
	t.Logf("rt-hold 2ms: worst data round trip %v, longest stretch %v", guarded, guardedHold)
	if guardedHold > 250*time.Millisecond {
		t.Errorf("with rt-hold 2ms the control loop ran %v without a pause (bound 250ms)", guardedHold)
	}
	if guarded > unguardedHold/2 {
		t.Errorf("with rt-hold 2ms a data round trip took %v, over half the unguarded stretch (%v): the data loop was starved", guarded, unguardedHold)
	}
}

// busyControlWorst runs prio-thread with the control loop in fifo:1 and
// RTHold hold, both loop threads on one CPU, floods the control address
// for flood, and returns the worst data round trip seen meanwhile and the
// longest stretch the control loop reports once the flood has ended (so a
// stretch that never paused during it is counted too).
func busyControlWorst(t *testing.T, hold, flood time.Duration) (worst, longest time.Duration) {
	cfg := reactors.DefaultConfig()
	cfg.Callback = "100us"
	cfg.RTHold = hold
	r := startFIFO(t, cfg)
	cpu := pinLoops(t, r)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			floodControl(t, r.ControlAddr().String(), uint64(10+i), stop)
		}()
	}
	endFlood := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer endFlood()
	if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.FramesEchoed > 0 }) {
		t.Fatalf("the control flood was not served: %+v", r.Stats().Counters)
	}
	data, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	for end := time.Now().Add(flood); time.Now().Before(end); {
		start := time.Now()
		if err := data.Send(wire.KindData, 1, 1, make([]byte, 16)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := data.Recv(5 * time.Second); err != nil {
			t.Fatalf("data round trip (loops on CPU %d): %v", cpu, err)
		}
		worst = max(worst, time.Since(start))
		time.Sleep(time.Millisecond)
	}
	endFlood()
	reactortest.Settled(r, 100*time.Millisecond, 5*time.Second)
	return worst, time.Duration(r.Stats().Counters.RTLongestHoldNs)
}

// pinLoops puts both loop threads of r on one CPU the process may use
// (the last) and returns it.
func pinLoops(t *testing.T, r *reactors.Reactor) int {
	t.Helper()
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := range 1024 {
		if allowed.IsSet(i) {
			cpu = i
		}
	}
	var one unix.CPUSet
	one.Set(cpu)
	for _, tid := range r.LoopThreads() {
		if err := unix.SchedSetaffinity(tid, &one); err != nil {
			t.Fatalf("pin loop thread %d to CPU %d: %v", tid, cpu, err)
		}
	}
	return cpu
}

// floodControl keeps the control connection's pipeline full of 64-byte
// DATA frames (reading the echoes as they come) until stop is closed.
func floodControl(t *testing.T, addr string, token uint64, stop <-chan struct{}) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	var batch []byte
	for seq := range uint64(64) {
		batch = wire.AppendFrame(batch, wire.KindData, 0, token, seq, 0, make([]byte, 48))
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Write(batch); err != nil && !reactortest.IsTimeout(err) {
			return
		}
	}
}
