package results_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
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

// TestMultiLoopMetrics feeds ComputeMetrics a shared-listener cell's result with
// known per-loop figures, churn, and an interval log whose data class,
// hot and steady service intervals differ, so that each figure shows it
// was read from the right place.
func TestMultiLoopMetrics(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	warmup := time.Second
	rec := record.NewRecorder(start, time.Second, warmup)
	data, _ := rec.Class(loadgen.ClassData)
	hot, _ := rec.Class(loadgen.ClassServicePrefix + "hot-0")
	light0, _ := rec.Class(loadgen.ClassServicePrefix + "steady-0")
	light1, _ := rec.Class(loadgen.ClassServicePrefix + "steady-1")
	rec.Advance(100 * time.Millisecond)
	light0.Record(time.Second) // warm-up: never counted
	rec.Advance(warmup + 100*time.Millisecond)
	for range 50 {
		data.Record(100 * time.Microsecond)
		data.Record(300 * time.Microsecond)
	}
	for range 1000 {
		hot.Record(10 * time.Millisecond) // a heavy connection's: not light
		light0.Record(200 * time.Microsecond)
	}
	light1.Record(5 * time.Millisecond) // the light tail, on the other connection
	light1.Record(5 * time.Millisecond)
	rec.Close(warmup + 2*time.Second)
	hlog := writeRunHlog(t, dir, rec)
	lat := rec.Summary()
	lat.Classes[loadgen.ClassChurn] = record.ClassSummary{Count: 10, P50Us: 150, P99Us: 900, MaxUs: 4000}
	per := []reactors.LoopStats{
		{Loop: 0, Role: reactors.RoleLoop, Conns: 30, Frames: 300, Busy: 0.3, CPU: 0.3, Wakeups: 4000},
		{Loop: 1, Role: reactors.RoleLoop, Conns: 10, Frames: 100, Busy: 0.1, CPU: 0.1, Wakeups: 1000},
	}
	res := &harness.CellResult{
		Valid: true,
		Load: &loadgen.Summary{Latency: lat, SelfCheck: loadgen.SelfCheck{RunS: 2},
			Churn: &loadgen.ChurnOutcome{Refused: 3, Reset: 4, Skipped: 5}},
		Lab: &lab.Result{Mode: lab.ModeLab, Server: &lab.ProcResult{Elapsed: 5 * time.Second}},
		Server: &roles.ServeOutput{Stats: reactors.Stats{
			PerLoop: per, Imbalance: reactors.ImbalanceOf(per),
			Counters:   reactors.Counters{Accepts: 40, UselessAcceptWakeups: 20},
			Histograms: map[string]reactors.HistSummary{reactors.HistHandoff: {Count: 40, P99: 70_000}, reactors.HistHandoffFirstRead: {Count: 40, P99: 85_000}},
		}},
	}
	m, err := results.ComputeMetrics(res, hlog, start.Add(warmup))
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= math.Abs(want)*0.02 }
	for _, c := range []struct {
		name string
		want float64
	}{
		{results.MetricUselessAccepts, 4},          // 20 over 5 s
		{results.MetricUselessAcceptsPerConn, 0.5}, // 20 over 40 accepted
		{results.MetricLoopWakeups, 1000},          // 5000 over 5 s
		{results.MetricLoopWakeupsPerConn, 125},    // 5000 over 40
		{results.MetricConnsPerLoopMin, 10},
		{results.MetricConnsPerLoopMax, 30},
		{results.MetricBusyMaxOverMean, 1.5},
		{results.MetricCPUMaxOverMean, 1.5},
		{results.MetricFramesJain, 0.8}, // 400² / (2 · (300² + 100²))
		{results.MetricHandoffP99, 70},  // µs
		{results.MetricHandoffReadP99, 85},
		{results.MetricChurnP50, 150},
		{results.MetricChurnP99, 900},
		{results.MetricChurnMax, 4000},
		{results.MetricChurnRefused, 3},
		{results.MetricChurnReset, 4},
		{results.MetricChurnSkipped, 5},
		{results.MetricDataSpread, 200}, // p99 300 µs − p50 100 µs
		{results.MetricDataStddev, 100}, // half at 100, half at 300
		{results.MetricLightP99, 200},   // steady-0's 1000 at 200 µs; not hot-0's 10 ms
		{results.MetricLightP999, 5000}, // steady-1's two at 5 ms; not the warm-up's 1 s
	} {
		got, ok := m[c.name]
		if !ok || !near(got, c.want) {
			t.Errorf("%s = %v (present %v), want %v", c.name, got, ok, c.want)
		}
	}
	// One data loop (a one-loop design, prio-thread's data loop beside
	// its control loop): no per-loop figures, no spread; churn stays.
	res.Server.PerLoop, res.Server.Imbalance = per[:1], nil
	m, err = results.ComputeMetrics(res, hlog, start.Add(warmup))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{results.MetricUselessAccepts, results.MetricConnsPerLoopMax, results.MetricFramesJain, results.MetricDataStddev, results.MetricLightP99} {
		if v, ok := m[name]; ok {
			t.Errorf("one data loop: %s = %v present", name, v)
		}
	}
	if _, ok := m[results.MetricChurnRefused]; !ok {
		t.Errorf("churn refused absent with churn")
	}
	for _, name := range []string{
		results.MetricUselessAccepts, results.MetricAcceptQueuePeak, results.MetricLightP999, results.MetricDataStddev, results.MetricChurnSkipped,
	} {
		if _, ok := results.MetricByName(name); !ok {
			t.Errorf("%s is not in the catalogue", name)
		}
	}
}

// writeRunHlog writes rec's interval log into dir as the load generator
// would, and returns its path.
func writeRunHlog(t *testing.T, dir string, rec *record.Recorder) string {
	t.Helper()
	var buf bytes.Buffer
	if err := rec.WriteHlog(&buf); err != nil {
		t.Fatal(err)
	}
	hlog := filepath.Join(dir, loadgen.HlogFile)
	if err := os.WriteFile(hlog, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return hlog
}
