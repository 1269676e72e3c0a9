package results_test

import (
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

// TestUrgentMetrics: the urgent class's latencies come from its own
// histogram's measured period (not the warm-up's, not data's), its counts
// from the load generator's outcome; without urgent bytes (or in a
// summary written before they existed) every urgent metric is absent.
func TestUrgentMetrics(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	warmup := time.Second
	rec := record.NewRecorder(start, time.Second, warmup)
	data, _ := rec.Class(loadgen.ClassData)
	urg, _ := rec.Class(loadgen.ClassUrgent)
	rec.Advance(100 * time.Millisecond)
	urg.Record(time.Second) // warm-up: not counted
	rec.Advance(warmup + 100*time.Millisecond)
	for range 99 {
		urg.Record(200 * time.Microsecond)
		data.Record(time.Millisecond)
	}
	urg.Record(50 * time.Millisecond)
	rec.Close(warmup + 2*time.Second)
	res := &harness.CellResult{Valid: true, Load: &loadgen.Summary{Latency: rec.Summary(),
		Urgent: &loadgen.UrgentOutcome{Sent: 110, Answered: 101, Mismatched: 3, Unsolicited: 1, Unanswered: 6, Skipped: 12, NotSent: 2}}}
	m, err := results.ComputeMetrics(res, "", start.Add(warmup))
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return got >= want*0.99 && got <= want*1.01 }
	for _, c := range []struct {
		name string
		want float64
	}{
		{results.MetricUrgentP50, 200},     // µs, not data's 1000
		{results.MetricUrgentMax, 50_000},  // µs, not the warm-up's second
		{results.MetricUrgentP999, 50_000}, // the 100th of 100
		{results.MetricUrgentCount, 100},   // measured latencies, not the 101 answered over the whole run
		{results.MetricUrgentSkips, 12},    //
		{results.MetricUrgentWrong, 4},     // 3 mismatched + 1 unsolicited
	} {
		if got, ok := m[c.name]; !ok || !near(got, c.want) {
			t.Errorf("%s = %v (present %v), want %v", c.name, got, ok, c.want)
		}
	}
	res.Load.Urgent = nil
	m, _ = results.ComputeMetrics(res, "", start.Add(warmup))
	for _, name := range []string{results.MetricUrgentP50, results.MetricUrgentP99, results.MetricUrgentP999, results.MetricUrgentMax,
		results.MetricUrgentCount, results.MetricUrgentSkips, results.MetricUrgentWrong} {
		if v, ok := m[name]; ok {
			t.Errorf("no urgent bytes: %s = %v present", name, v)
		}
	}
}
