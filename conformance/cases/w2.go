package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// w2Case is W2: a server with only idle clients does not spin.
func w2Case() conformance.Case {
	_, cpu := w2CPULimit()
	_, waits := w2WaitsLimit(1, time.Millisecond)
	return conformance.Case{
		ID:    "W2",
		Title: "no busy loop while idle",
		Claim: fmt.Sprintf("with %d connected, idle clients the server does not spin (e.g. on EPOLLOUT with nothing to write)", w2Clients),
		Bound: fmt.Sprintf("server CPU ≤ %s: an idle loop wakes at most once a tick (~20 µs each here, ≤ 2%% at a 1 ms tick, plus Go runtime ≤ 8%% measured); a spinning loop is ~100%%. A reference reactor's loops also wait in epoll at most 4 times a tick each, and 100 more (%s), which a spinning loop exceeds even when a contended machine gives it 2%% of a CPU. Under the CPU bound a server with a process of its own is also held to the scheduler's account of each of its threads: one that %s spun (fail); one that asked for a CPU that long but blocked more often, or threads that together asked for one for the whole window, were starved, so its CPU says nothing (inconclusive)", cpu, waits, w2SpinnerText()),
		Run:   runW2,
	}
}

// W2's idle clients, and its measurement window.
const (
	w2Clients = 10
	w2Window  = 500 * time.Millisecond
)

// w2CPULimit is the most CPU the server may use in W2's idle window: a
// quarter of it.
func w2CPULimit() (limit time.Duration, arithmetic string) {
	limit = w2Window / 4
	return limit, fmt.Sprintf("a quarter of the %v idle window = %v", w2Window, limit)
}

// w2WaitsLimit is the most epoll_waits a reference reactor's loops may
// make in W2's idle window: four a timer tick each, and 100 more. Idle,
// each loop waits about twice a tick (measured: 820–950 in 500 ticks;
// deadline timers, fewer); a spinning loop waits every few microseconds
// it runs, so even at 2% of a CPU it exceeds four a tick.
func w2WaitsLimit(loops int, tick time.Duration) (limit uint64, arithmetic string) {
	loops = max(loops, 1)
	limit = uint64(loops) * (4*uint64(w2Window/tick) + 100)
	return limit, fmt.Sprintf("(4 × %v / %v + 100) × %d loop(s) = %d epoll_waits", w2Window, tick, loops, limit)
}

func runW2(c *conformance.C) {
	inst := c.Instance()
	for i := 0; i < w2Clients; i++ {
		p := dial(c, fmt.Sprintf("conn %d", i+1), inst.Addr())
		p.write(c, dataFrame(uint64(i+1), 0, 1))
		p.expectEcho(c, uint64(i+1), 0, 1, echoBound)
	}
	// The last echo's flush and its round end within microseconds; the
	// lead-in keeps them out of the window.
	time.Sleep(100 * time.Millisecond) // a measurement lead-in, not synchronisation
	pids, pidsErr := serverPids(c)
	var threads0 map[threadKey]threadAccount
	if _, ok := inst.(conformance.ProcessGroup); ok && pidsErr == nil {
		threads0, _ = readThreads(pids)
	}
	u0 := usage(c)
	s0, statsErr := inst.Stats()
	const window = w2Window
	time.Sleep(window) // the measurement window: the clients are idle
	u1 := usage(c)
	var threads []threadSpan
	if threads0 != nil {
		if threads1, err := readThreads(pids); err == nil {
			threads = threadSpans(threads0, threads1)
		}
	}
	// A busy loop on a contended machine may get little of the window's
	// CPU. Its run-queue wait shows the contention, but is no measure of
	// spinning: an idle server's every timer wakeup waits behind the
	// machine's other work too (measured: 50–370 ms of a 500 ms window
	// beside 8 busy threads on 2 cores), so it is logged, not judged.
	cpu := u1.CPU - u0.CPU
	if u0.RunqWait >= 0 && u1.RunqWait >= 0 {
		c.Logf("server CPU %v (and %v waiting for a CPU) in a %v idle window", cpu, u1.RunqWait-u0.RunqWait, window)
	} else {
		c.Logf("server CPU %v in a %v idle window", cpu, window)
	}
	// A reference reactor also counts its epoll_waits, which do not depend
	// on how much CPU the machine spared (w2WaitsLimit).
	cpuBound, cpuArithmetic := w2CPULimit()
	var wakeups, wakeBound uint64
	var evidence, waitsArithmetic string
	if statsErr == nil {
		if s1, err := inst.Stats(); err == nil {
			d := s1.Counters
			wakeups = d.EpollWaits - s0.Counters.EpollWaits
			tick := time.Millisecond
			if ref := inst.Reference(); ref != nil && ref.Config.Tick > 0 {
				tick = ref.Config.Tick
			}
			wakeBound, waitsArithmetic = w2WaitsLimit(s1.Loops, tick)
			evidence = fmt.Sprintf("in the window: epoll_waits %d (zero-timeout %d; bound %s), events out %d with an empty queue %d, timers %d",
				wakeups, d.ZeroTimeoutWaits-s0.Counters.ZeroTimeoutWaits, waitsArithmetic, d.EventsOut-s0.Counters.EventsOut,
				d.EpolloutEmpty-s0.Counters.EpolloutEmpty, d.TimersFired-s0.Counters.TimersFired)
			c.Logf("%s", evidence)
		}
	}
	if cpu > cpuBound || wakeups > wakeBound && wakeBound > 0 {
		if evidence != "" {
			c.Evidencef("%s", evidence)
		}
		// The clients stay connected and idle: a server that spun in
		// the window spins on, so what it does now is what it did then.
		explainFailure(c, "the "+diagnosisWindow.String()+" after the idle window, the clients still connected and idle")
		if wakeBound > 0 {
			c.Fatalf("server used %v CPU and waited in epoll %d times in a %v window with only idle clients (bounds %s; %s)", cpu, wakeups, window, cpuArithmetic, waitsArithmetic)
		}
		c.Fatalf("server used %v CPU in a %v window with only idle clients (bound %s)", cpu, window, cpuArithmetic)
	}
	// Under the CPU bound: a machine that starved the server gave a
	// spinning loop too little CPU to cross it. An idle loop's thread
	// wants a CPU only for its wakeups; one that asked for most of the
	// window either spun or was starved of it.
	if asked, _, _ := r4SpinnerLimit(); len(threads) > 0 && threads[0].asked() >= asked {
		busiest := threads[0]
		if r4Spins(busiest) {
			explainFailure(c, "the "+diagnosisWindow.String()+" after the idle window, the clients still connected and idle")
			c.Fatalf("server spins with only idle clients, though starved of CPU (%v CPU, under the bound %s): %s (%s)", cpu, cpuArithmetic, busiest, w2SpinnerText())
		}
		c.Inconclusivef("the server was starved of CPU: %s in the %v window, so its %v of CPU under the bound %s says nothing", busiest, window, cpu, cpuArithmetic)
	}
	// The whole process asking for a CPU as long as the window (a spin a
	// runtime moves from thread to thread asks on each of them) is more
	// than an idle server's wakeups wait for on a busy machine (50–370 ms
	// measured): R4's rule for a server starved under its bound.
	if wait := u1.RunqWait - u0.RunqWait; u0.RunqWait >= 0 && u1.RunqWait >= 0 && cpu+wait >= window {
		c.Inconclusivef("the server was starved of CPU: it ran %v and waited %v for a CPU in the %v window (its threads together asked for a CPU longer than the window), so its CPU under the bound %s says nothing", cpu, wait, window, cpuArithmetic)
	}
}

// w2SpinnerText is the scheduler's rule W2 shares with R4 (r4Spins, over
// r4Window, which is W2's window's length too): when a thread counts as
// spinning.
func w2SpinnerText() string {
	_, _, arithmetic := r4SpinnerLimit()
	return arithmetic
}
