//go:build linux

package loadgen_test

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// TestCoordinatedOmission stalls the target (SIGSTOP, then SIGCONT a second
// later) in the middle of a constant-rate run whose window is small enough
// that the sender has to wait. Latency measured from the intended send times
// must show the stall as it was: a stall of S in a run of D at a constant
// rate leaves a fraction S/D of the frames with latencies spread evenly over
// [0, S], so p99 = S·(1 − 0.01·D/S). Latency measured from the actual writes
// hides it (only the frames of one window saw it): its p99 must be far
// below.
func TestCoordinatedOmission(t *testing.T) {
	const (
		stall    = time.Second
		duration = 5 * time.Second
	)
	r := startReactor(t, reactors.LT)
	var once sync.Once
	stopped := make(chan time.Duration, 1)
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Steady: 1, Rate: 2000, Window: 16,
		Duration: duration, Interval: 100 * time.Millisecond, Drain: 2 * time.Second,
		Progress: func(p loadgen.Progress) {
			if p.Elapsed < 2*time.Second {
				return
			}
			once.Do(func() {
				if err := syscall.Kill(r.Pid(), syscall.SIGSTOP); err != nil {
					t.Errorf("SIGSTOP: %v", err)
				}
				stopped <- p.Elapsed
				time.AfterFunc(stall, func() { syscall.Kill(r.Pid(), syscall.SIGCONT) })
			})
		}}
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-stopped:
		t.Logf("stalled at %v for %v", at, stall)
	default:
		t.Fatal("the target was never stalled")
	}
	if !res.Valid || res.Totals.Lost != 0 {
		t.Fatalf("invalid %q, totals %+v", res.Invalid, res.Totals)
	}
	corrected, _ := res.Recorder.Histogram(loadgen.ClassData)
	uncorrected, _ := res.Recorder.Histogram(loadgen.ClassDataUncorrected)
	want := stall.Seconds() * (1 - 0.01*duration.Seconds()/stall.Seconds())
	got := time.Duration(corrected.ValueAtPercentile(99)).Seconds()
	raw := time.Duration(uncorrected.ValueAtPercentile(99)).Seconds()
	t.Logf("p99 corrected %.3f s (analytic %.3f s), uncorrected %.6f s; self-check %+v", got, want, raw, res.SelfCheck)
	if got < 0.8*want || got > 1.2*want {
		t.Errorf("corrected p99 %.3f s, want within 20%% of the analytic %.3f s", got, want)
	}
	if raw >= got/10 {
		t.Errorf("uncorrected p99 %.6f s is not far below the corrected %.3f s", raw, got)
	}
	// The wait is the target's: the window was full for about the stall.
	// (The limit itself may still say "loadgen" on a machine busy enough to
	// make the generator's send lag exceed 1 ms; the reasons say both.)
	sc := res.SelfCheck
	if sc.BlockedS["window"] < 0.8*stall.Seconds() || sc.BlockedS["window"] > 1.5*stall.Seconds() ||
		!strings.Contains(strings.Join(sc.Reasons, "\n"), "waited on the target") {
		t.Errorf("self-check should report the window full for about %v: %+v", stall, sc)
	}
}
