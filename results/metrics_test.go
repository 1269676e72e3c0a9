package results_test

import (
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

// TestMetricsKnownValues feeds ComputeMetrics a hand-made result whose every
// figure is known, with data and control deliberately different, and a
// warm-up holding values that must not count.
func TestMetricsKnownValues(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	warmup := time.Second
	rec := record.NewRecorder(start, time.Second, warmup)
	data, _ := rec.Class(loadgen.ClassData)
	ctl, _ := rec.Class(loadgen.ClassControl)
	// Warm-up: control answers over 10 ms that must not be counted.
	rec.Advance(100 * time.Millisecond)
	for range 5 {
		ctl.Record(50 * time.Millisecond)
	}
	// Measured: data mostly 100 µs with three answers of 20 ms; control
	// 1 ms but for two answers of 12 ms and 30 ms.
	rec.Advance(warmup + 100*time.Millisecond)
	for range 997 {
		data.Record(100 * time.Microsecond)
	}
	for range 3 {
		data.Record(20 * time.Millisecond)
	}
	for range 98 {
		ctl.Record(time.Millisecond)
	}
	ctl.Record(12 * time.Millisecond)
	ctl.Record(30 * time.Millisecond)
	rec.Close(warmup + 2*time.Second)
	hlog := writeRunHlog(t, dir, rec)
	lat := rec.Summary()
	res := &harness.CellResult{
		Valid: true,
		Load: &loadgen.Summary{
			EchoRate: 1234, Latency: lat,
			SelfCheck: loadgen.SelfCheck{RunS: 2, Limit: loadgen.LimitLoadgen},
			Conns: []loadgen.ConnResult{
				{Kind: "hot", Accounting: loadgen.Accounting{Echoed: 1000}},
				{Kind: "hot", Accounting: loadgen.Accounting{Echoed: 3000}},
				{Kind: "control", Accounting: loadgen.Accounting{Echoed: 1e6}}, // not a data source
			},
			Totals:        loadgen.Accounting{Echoed: 4000, Lost: 1, Duplicated: 2},
			ControlTotals: loadgen.Accounting{WrongConn: 4},
			Stop:          &loadgen.StopOutcome{Status: "acknowledged", LatencyUs: 777},
			HealthCheck:   &loadgen.HealthCheck{FalseTimeouts: 9, FalseRemovals: 2},
		},
		Lab: &lab.Result{Mode: lab.ModeLab, Server: &lab.ProcResult{
			UserNs: 1.5e9, SysNs: 0.5e9, MaxRSS: 3 << 20, Elapsed: 4 * time.Second}},
		Server: &roles.ServeOutput{Stats: reactors.Stats{
			Counters: reactors.Counters{FramesEchoed: 1e6, IngressMaxDepth: 17, IdleWakeups: 400, ZeroTimeoutWaits: 80},
			Histograms: map[string]reactors.HistSummary{
				reactors.HistRound:     {Count: 10, P99: 250_000, Max: 900_000},
				reactors.HistRotation:  {Count: 10, Max: 3_000_000},
				reactors.HistTimerLate: {Count: 10, P99: 40_000},
			},
		}},
	}
	m, err := results.ComputeMetrics(res, hlog, start.Add(warmup))
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return got >= want*0.99 && got <= want*1.01 }
	for _, c := range []struct {
		name string
		want float64
	}{
		{results.MetricThroughput, 1234},
		{results.MetricSourceMin, 500},                                      // 1000 frames over RunS 2
		{results.MetricFairness, 0.8},                                       // (4000)² / (2 · (1000² + 3000²))
		{results.MetricDataP50, 100},                                        // µs
		{results.MetricDataMax, 20_000},                                     // µs
		{results.MetricControlP50, 1000},                                    // µs, not data's 100
		{results.MetricControlMax, 30_000},                                  // µs, not the warm-up's 50 ms
		{results.MetricControlOver10ms, 2},                                  // 12 ms and 30 ms; not the warm-up's 5 nor data's 3
		{results.MetricFalseTimeouts, 9},                                    // the load generator's count, not the histogram's 2
		{results.MetricFalseRemovals, 2},                                    //
		{results.MetricStop, 777},                                           // µs
		{results.MetricAnomalies, 7},                                        // 1 lost + 2 duplicated + 4 wrong connection
		{results.MetricServerCPU, 2},                                        // 2 CPU-s over 1e6 frames
		{results.MetricServerRSS, 3},                                        // MiB
		{results.MetricIngressHWM, 17},                                      //
		{results.MetricIdleWakeups, 100},                                    // 400 over 4 s of life
		{results.MetricZeroWaits, 20},                                       // 80 over 4 s
		{results.MetricRoundP99, 250},                                       // µs
		{results.MetricRoundMax, 900},                                       // µs
		{results.MetricRotationMax, 3000},                                   // µs
		{results.MetricTimerDeviation, 40},                                  // µs
		{results.MetricLoadgenLimited, 1},                                   //
		{results.MetricControlP99, lat.Classes[loadgen.ClassControl].P99Us}, // the control class's own
	} {
		got, ok := m[c.name]
		if !ok || !near(got, c.want) {
			t.Errorf("%s = %v (present %v), want %v", c.name, got, ok, c.want)
		}
	}
	if m[results.MetricControlP99] == m[results.MetricDataP99] {
		t.Errorf("control p99 equals data p99 (%v): read from the wrong class?", m[results.MetricDataP99])
	}
	// A black box: no reactor statistics, so no server-side figures but
	// CPU per frame from the load generator's count.
	res.Server = nil
	m, err = results.ComputeMetrics(res, hlog, start.Add(warmup))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{results.MetricRoundP99, results.MetricIngressHWM, results.MetricIdleWakeups, results.MetricRotationMax} {
		if _, ok := m[name]; ok {
			t.Errorf("black box: %s present", name)
		}
	}
	if got := m[results.MetricServerCPU]; !near(got, 2e9/1e9/(4000/1e6)) {
		t.Errorf("black box server CPU = %v, want %v", got, 2e9/1e9/(4000/1e6))
	}
	// A summary without a health check (no control probes, or written
	// before it was counted): the two metrics are absent, not 0.
	res.Load.HealthCheck = nil
	m, _ = results.ComputeMetrics(res, hlog, start.Add(warmup))
	for _, name := range []string{results.MetricFalseTimeouts, results.MetricFalseRemovals} {
		if v, ok := m[name]; ok {
			t.Errorf("no health check: %s = %v present", name, v)
		}
	}
}
