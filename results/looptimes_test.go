package results_test

import (
	"math"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/results"
)

// TestLoopTimeMetrics: each loop-time metric is the mean over the loop
// threads of its share, in per cent; a thread whose schedstat was not
// read (-1) leaves serving and runnable absent and the others present; a
// run without the figures, or without a loop thread, has none.
func TestLoopTimeMetrics(t *testing.T) {
	res := &harness.CellResult{LoopTimes: &diagnose.LoopTimes{Loops: []diagnose.ThreadShares{
		{Tid: 1, Waiting: 0.9, Serving: 0.08, Blocked: 0, Runnable: 0.02},
		{Tid: 2, Waiting: 0.1, Serving: 0.5, Blocked: 0.3, Runnable: 0.1},
	}}}
	m, _ := results.ComputeMetrics(res, "", time.Time{})
	for name, want := range map[string]float64{
		results.MetricLoopWaiting: 50, results.MetricLoopServing: 29, results.MetricLoopBlocked: 15, results.MetricLoopRunnable: 6,
	} {
		if got, ok := m[name]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	res.LoopTimes.Loops[1].Serving, res.LoopTimes.Loops[1].Runnable = -1, -1
	m, _ = results.ComputeMetrics(res, "", time.Time{})
	if _, ok := m[results.MetricLoopServing]; ok {
		t.Errorf("serving present with a thread's schedstat unread: %v", m)
	}
	if _, ok := m[results.MetricLoopWaiting]; !ok {
		t.Errorf("waiting absent with every thread's samples read: %v", m)
	}
	for _, lt := range []*diagnose.LoopTimes{nil, {}} {
		res.LoopTimes = lt
		m, _ = results.ComputeMetrics(res, "", time.Time{})
		for _, name := range []string{results.MetricLoopWaiting, results.MetricLoopServing, results.MetricLoopBlocked, results.MetricLoopRunnable} {
			if v, ok := m[name]; ok {
				t.Errorf("loop times %+v: %s = %v present", lt, name, v)
			}
		}
	}
}
