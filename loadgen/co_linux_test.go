//go:build linux

package loadgen_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// TestCoordinatedOmission stalls the target (SIGSTOP, then SIGCONT about a
// second later) in the middle of a constant-rate run whose window is small
// enough that the sender has to wait. Latency measured from the intended
// send times must show the stall as it was: a stall of S in a run of D at a
// constant rate leaves a fraction S/D of the frames with latencies spread
// evenly over [0, S], so p99 = S·(1 − 0.01·D/S) = S − 0.01·D (the top 1% are
// the frames intended in the first 0.01·D of the stall). Latency measured
// from the actual writes hides it (only the frames of one window saw it):
// its p99 must be far below.
//
// The band around S − 0.01·D. S is the stall as measured, from just after
// kill(SIGSTOP) returns to just before kill(SIGCONT) is called, not the
// timer's nominal second: the AfterFunc that sends SIGCONT fires tens of ms
// late on this VM's noisy cores, which alone was most of the old ±20%. The
// target was stopped for at least that measured S, so what remains is:
//
//   - below: the histogram's precision (3 significant digits: 1 ms at 1 s),
//     the schedule's granularity (p99 is the 100th of D·2000 = 10000 values
//     at D = 5 s, the 40th of 4000 at 2 s, one every 0.5 ms) and SIGSTOP's
//     delivery after kill returns (µs): lowMargin = 5 ms;
//   - above: δ, the time from SIGCONT to the answers of the top 1% frames:
//     the resumed target waiting for a CPU (a few ms, tens on a loaded VM);
//     the window, 16 frames = 8 ms at 2000/s: the first 8 ms of the stall
//     were written before it filled and the rest follows 16 per round trip
//     once answers flow, so the top 1% (100 frames at D = 5 s) are
//     answered within about 7 round trips of tens to hundreds of µs each
//     (a few ms);
//     the loopback RTT itself (tens of µs); and the generator's send lag
//     (p99 < 1 ms, its self-check's bound): highMargin = 60 ms.
//
// With several loops the same schedule is split over that many steady
// sources, one per loop (each with its own window, each at its share of
// the rate): the aggregate is the same stream of intended times, so the
// same p99 — the correction is exact only if every loop keeps its share of
// the schedule through the stall, and the merged histogram holds every
// loop's frames.
//
// The run is 5 s, the stall beginning 2 s in; with -short, 2 s and 0.5 s
// in: the same stall, the same margins, and half a second of schedule
// before and after it, so the p99 still falls inside the stall (S/D a half,
// not a fifth) while the uncorrected p99 still sees only one window of it
// (16 frames of the top 40).
//
// On the uring engine (where the kernel has it) the run is the -short one
// on one loop, and only in the full tier: the correction is the engine's
// schedule and stamps, which are the epoll engine's code, so what is tested
// there is that the uring engine's waits and completions keep them.
func TestCoordinatedOmission(t *testing.T) {
	for _, engine := range engines {
		for _, loops := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/loops=%d", engine, loops), func(t *testing.T) {
				switch {
				case testing.Short() && loops > 1:
					t.Skip("-short: one loop (the split schedule runs in the full tier)")
				case testing.Short() && engine != loadgen.EngineEpoll:
					t.Skipf("-short: the %s engine (the %s engine's runs in the full tier)", loadgen.EngineEpoll, engine)
				case engine != loadgen.EngineEpoll && loops > 1:
					t.Skipf("the %s engine on one loop", engine)
				}
				needEngine(t, engine)
				testCoordinatedOmission(t, engine, loops, testing.Short() || engine != loadgen.EngineEpoll)
			})
		}
	}
}

func testCoordinatedOmission(t *testing.T, engine string, loops int, short bool) {
	const (
		nominal    = time.Second
		lowMargin  = 5 * time.Millisecond
		highMargin = 60 * time.Millisecond
	)
	duration, stallAt := 5*time.Second, 2*time.Second
	if short {
		duration, stallAt = 2*time.Second, 500*time.Millisecond
	}
	r := startReactor(t, reactors.LT)
	var once sync.Once
	type span struct {
		at              time.Duration // run time of the stall's start
		stopped, resume time.Time
	}
	stalled := make(chan span, 1)
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Steady: loops, Loops: loops, Rate: 2000, Window: 16,
		Duration: duration, Interval: 100 * time.Millisecond, Drain: 2 * time.Second, Engine: engine,
		Progress: func(p loadgen.Progress) {
			if p.Elapsed < stallAt {
				return
			}
			once.Do(func() {
				if err := syscall.Kill(r.Pid(), syscall.SIGSTOP); err != nil {
					t.Errorf("SIGSTOP: %v", err)
				}
				stopped := time.Now()
				time.AfterFunc(nominal, func() {
					resume := time.Now()
					syscall.Kill(r.Pid(), syscall.SIGCONT)
					stalled <- span{p.Elapsed, stopped, resume}
				})
			})
		}}
	lag := startLagMeter()
	res, err := loadgen.Run(context.Background(), cfg)
	lag.stop()
	if err != nil {
		t.Fatal(err)
	}
	var stall time.Duration
	var resumed time.Time
	select {
	case s := <-stalled:
		stall, resumed = s.resume.Sub(s.stopped), s.resume
		t.Logf("stalled at %v for %v (nominal %v)", s.at, stall, nominal)
	default:
		t.Fatal("the target was never stalled, or not resumed before the run ended")
	}
	if !res.Valid || res.Totals.Lost != 0 {
		t.Fatalf("invalid %q, totals %+v", res.Invalid, res.Totals)
	}
	corrected, _ := res.Recorder.Histogram(loadgen.ClassData)
	uncorrected, _ := res.Recorder.Histogram(loadgen.ClassDataUncorrected)
	want := stall - time.Duration(0.01*float64(duration))
	got := time.Duration(corrected.ValueAtPercentile(99))
	raw := time.Duration(uncorrected.ValueAtPercentile(99))
	t.Logf("p99 corrected %v (analytic %v, %+v off), uncorrected %v; self-check %+v", got, want, got-want, raw, res.SelfCheck)
	// The margin above assumes the target and the generator get a CPU
	// within tens of ms once the target resumes. Where this test's own
	// thread, sleeping 1 ms at a time, was held off a CPU for more than
	// half the margin then, the machine, not the correction, decides the
	// tail: inconclusive.
	if held := lag.maxIn(resumed, resumed.Add(500*time.Millisecond)); got > want+highMargin && held > highMargin/2 {
		t.Skipf("inconclusive: corrected p99 %v is %v above the analytic %v, but this process was held off a CPU for %v in the 500 ms after SIGCONT (more than half the %v margin): the machine is too busy for the bound", got, got-want, want, held, highMargin)
	}
	if got < want-lowMargin || got > want+highMargin {
		t.Errorf("corrected p99 %v, want within [-%v, +%v] of the analytic %v", got, lowMargin, highMargin, want)
	}
	if raw >= got/10 {
		t.Errorf("uncorrected p99 %v is not far below the corrected %v", raw, got)
	}
	// The wait is the target's: the window was full for about the stall.
	// (The limit itself may still say "loadgen" on a machine busy enough to
	// make the generator's send lag exceed 1 ms; the reasons say both.)
	sc := res.SelfCheck
	blocked := stall.Seconds() * float64(loops) // source-seconds: each source waited about the stall
	if sc.BlockedS["window"] < 0.8*blocked || sc.BlockedS["window"] > 1.5*blocked ||
		!strings.Contains(strings.Join(sc.Reasons, "\n"), "waited on the target") {
		t.Errorf("self-check should report the window full for about %v per source: %+v", stall, sc)
	}
	if len(res.Loops) != loops {
		t.Fatalf("%d loop reports, want %d", len(res.Loops), loops)
	}
	var sent uint64
	for _, lr := range res.Loops {
		if len(lr.Connections) != 1 {
			t.Errorf("loop %d served %q, want one steady source", lr.Index, lr.Connections)
		}
		if w := lr.SelfCheck.BlockedS["window"]; w < 0.8*stall.Seconds() {
			t.Errorf("loop %d: its source waited on the window %.3f s, less than the stall %v: that loop's share of the schedule was not kept", lr.Index, w, stall)
		}
		sent += lr.Totals.Sent
	}
	if sent != res.Totals.Sent {
		t.Errorf("the loops sent %d frames in all, the run's totals say %d", sent, res.Totals.Sent)
	}
}

// lagMeter is a thread that sleeps 1 ms at a time and records how much
// later than asked it woke: how long this process was held off a CPU.
type lagMeter struct {
	mu    sync.Mutex
	woke  []time.Time
	late  []time.Duration
	done  chan struct{}
	ended chan struct{}
}

func startLagMeter() *lagMeter {
	m := &lagMeter{done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(m.ended)
		for {
			select {
			case <-m.done:
				return
			default:
			}
			before := time.Now()
			time.Sleep(time.Millisecond)
			now := time.Now()
			m.mu.Lock()
			m.woke = append(m.woke, now)
			m.late = append(m.late, now.Sub(before)-time.Millisecond)
			m.mu.Unlock()
		}
	}()
	return m
}

// stop ends the meter and waits for its goroutine.
func (m *lagMeter) stop() {
	close(m.done)
	<-m.ended
}

// maxIn is the longest lateness of a wake-up in [from, to].
func (m *lagMeter) maxIn(from, to time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var worst time.Duration
	for i, w := range m.woke {
		if !w.Before(from) && !w.After(to) {
			worst = max(worst, m.late[i])
		}
	}
	return worst
}
