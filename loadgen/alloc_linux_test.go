//go:build linux

package loadgen_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// TestNoAllocationPerFrame: two runs that differ only in length (and close
// the same number of intervals, whose histograms do allocate) allocate the
// same: sending, receiving and checking a frame allocate nothing, on
// either engine (the uring engine's sends pin their bytes: a pin reuses
// its table entry).
func TestNoAllocationPerFrame(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			needEngine(t, engine)
			testNoAllocationPerFrame(t, engine)
		})
	}
}

func testNoAllocationPerFrame(t *testing.T, engine string) {
	r := startReactor(t, reactors.LT)
	measure := func(d time.Duration) (mallocs, frames uint64) {
		cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Hot: 2, InFlight: 32, Steady: 1, Rate: 20000,
			ControlEvery: time.Millisecond, Duration: d, Interval: 2 * time.Second, Drain: 200 * time.Millisecond, Engine: engine}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		res, err := loadgen.Run(context.Background(), cfg)
		runtime.ReadMemStats(&m1)
		if err != nil || !res.Valid {
			t.Fatalf("%v %q", err, res.Invalid)
		}
		return m1.Mallocs - m0.Mallocs, res.Totals.Sent + res.ControlTotals.Sent
	}
	shortM, shortF := measure(200 * time.Millisecond)
	longM, longF := measure(800 * time.Millisecond)
	if longF < shortF+10000 {
		t.Fatalf("the longer run sent %d frames, the shorter %d", longF, shortF)
	}
	perFrame := (float64(longM) - float64(shortM)) / float64(longF-shortF)
	t.Logf("%d allocations for %d frames, %d for %d: %.5f per extra frame", shortM, shortF, longM, longF, perFrame)
	if perFrame > 0.001 {
		t.Errorf("%.5f allocations per frame", perFrame)
	}
}
