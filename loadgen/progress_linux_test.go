package loadgen_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// TestProgressControlOnly runs control probes alone against lt: every
// progress report shows no data frame and a rate of 0 (the summary's
// figures), and the PINGs under their own counts.
func TestProgressControlOnly(t *testing.T) {
	t.Parallel() // its own reactor; counts decide, not timings
	r := startReactor(t, reactors.LT)
	var mu sync.Mutex
	var reports []loadgen.Progress
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, ControlEvery: 10 * time.Millisecond,
		Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond,
		Progress: func(p loadgen.Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		}}
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) < 2 {
		t.Fatalf("%d progress reports in 0.5 s at 100 ms", len(reports))
	}
	last := reports[len(reports)-1]
	for _, p := range reports {
		if p.Sent != 0 || p.Echoed != 0 || p.Rate != 0 {
			t.Errorf("report at %v: sent %d echoed %d, %.0f frames/s: control PINGs counted as data", p.Elapsed, p.Sent, p.Echoed, p.Rate)
		}
	}
	if last.ControlEchoed == 0 || res.ControlTotals.Echoed < last.ControlEchoed || res.Totals.Sent != 0 {
		t.Errorf("last report control echoed %d; summary control %+v, data %+v", last.ControlEchoed, res.ControlTotals, res.Totals)
	}
}
