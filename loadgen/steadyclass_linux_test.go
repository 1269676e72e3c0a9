//go:build linux

package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// TestSteadyClassBesideHot: with hot and steady sources the steady frames
// are recorded in class steady as well as data (the light connections'
// own latency), and the steady-only run has no such class (it would be
// data again).
func TestSteadyClassBesideHot(t *testing.T) {
	r := startReactor(t, reactors.LT)
	for _, hot := range []int{1, 0} {
		cfg := loadgen.Config{DataAddr: r.Data, Hot: hot, Steady: 2, Rate: 2000,
			Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, Drain: 500 * time.Millisecond, Interval: 100 * time.Millisecond}
		if hot > 0 {
			cfg.InFlight = 4
		}
		res, err := loadgen.Run(context.Background(), cfg)
		if err != nil || !res.Valid {
			t.Fatalf("hot %d: %v %q", hot, err, res.Invalid)
		}
		classes := res.Summary().Latency.Classes
		steady, ok := classes[loadgen.ClassSteady]
		switch {
		case hot == 0 && ok:
			t.Errorf("steady only: class %s recorded (%d values): it would be data again", loadgen.ClassSteady, steady.Count)
		case hot > 0 && !ok:
			t.Errorf("hot and steady: no class %s; classes %v", loadgen.ClassSteady, res.Recorder.Classes())
		case hot > 0:
			data := classes[loadgen.ClassData].Count
			// 2000 frames/s for the 300 ms measured: about 600; data also holds the hot frames.
			if steady.Count < 400 || steady.Count > 800 || data <= steady.Count {
				t.Errorf("class %s holds %d values, data %d: want the ~600 steady frames, data more", loadgen.ClassSteady, steady.Count, data)
			}
		}
	}
}
