package results_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

// TestCatalogueNamesEachMetricOnce: every entry has a name of lower case,
// digits and '_', a label, a description and a Compute, and no name is
// declared twice; every Metric… constant of metrics.go names exactly one
// entry (a name is never declared and left without its entry), and the
// limit flags, which are a run's flags, name none.
func TestCatalogueNamesEachMetricOnce(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9_]+$`)
	entries := map[string]int{}
	for _, m := range results.Metrics {
		entries[m.Name]++
		if !valid.MatchString(m.Name) || m.Label == "" || m.Describe == "" || m.Compute == nil {
			t.Errorf("entry %q: name, label, description and Compute are all required (label %q, Compute nil %v)", m.Name, m.Label, m.Compute == nil)
		}
	}
	for name, n := range entries {
		if n > 1 {
			t.Errorf("%s is declared %d times", name, n)
		}
	}
	flags := map[string]bool{results.MetricLoadgenLimited: true, results.MetricServerLimited: true, results.MetricNeitherLimited: true}
	for flag := range flags {
		if entries[flag] > 0 {
			t.Errorf("the limit flag %s is a catalogue entry", flag)
		}
	}
	f, err := parser.ParseFile(token.NewFileSet(), "metrics.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	constants := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Metric") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				name, _ := strconv.Unquote(lit.Value)
				constants++
				if entries[name] != 1 {
					t.Errorf("%s = %q names %d catalogue entries, want 1", id.Name, name, entries[name])
				}
			}
		}
	}
	if constants != len(results.Metrics) {
		t.Errorf("metrics.go declares %d metric names, the catalogue has %d entries", constants, len(results.Metrics))
	}
}

// representativeRun is a cell's result that every entry of the catalogue
// applies to: a reference reactor with two data loops (its own
// statistics, handoffs, per-loop figures), the lab's record of the server
// with accept queue samples, its threads' time in the measured period
// and samples of its CPUs there, and a load with hot and steady sources,
// control probes and their health check, urgent bytes, churn and STOP,
// whose interval log holds data, control and steady samples.
func representativeRun(t *testing.T) (*harness.CellResult, string, time.Time) {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	warmup := time.Second
	rec := record.NewRecorder(start, time.Second, warmup)
	data, _ := rec.Class(loadgen.ClassData)
	ctl, _ := rec.Class(loadgen.ClassControl)
	steady, _ := rec.Class(loadgen.ClassSteady)
	rec.Advance(warmup + 100*time.Millisecond)
	for i := range 1000 {
		data.Record(time.Duration(100+i) * time.Microsecond)
		steady.Record(time.Duration(200+i) * time.Microsecond)
	}
	for range 98 {
		ctl.Record(time.Millisecond)
	}
	ctl.Record(12 * time.Millisecond)
	ctl.Record(30 * time.Millisecond)
	rec.Close(warmup + 2*time.Second)
	hlog := writeRunHlog(t, t.TempDir(), rec)
	lat := rec.Summary()
	lat.Classes[loadgen.ClassUrgent] = record.ClassSummary{Count: 50, P50Us: 80, P99Us: 300, P999Us: 400, MaxUs: 500}
	lat.Classes[loadgen.ClassChurn] = record.ClassSummary{Count: 10, P50Us: 150, P99Us: 900, MaxUs: 4000}
	per := []reactors.LoopStats{
		{Loop: 0, Role: reactors.RoleLoop, Conns: 30, Frames: 300, Busy: 0.3, CPU: 0.3, Wakeups: 4000},
		{Loop: 1, Role: reactors.RoleLoop, Conns: 10, Frames: 100, Busy: 0.1, CPU: 0.1, Wakeups: 1000},
	}
	res := &harness.CellResult{
		Valid: true,
		Load: &loadgen.Summary{
			StartTime: start, MeasuredS: 2, EchoRate: 2000, Latency: lat,
			SelfCheck: loadgen.SelfCheck{RunS: 2},
			Conns: []loadgen.ConnResult{
				{Kind: "hot", Accounting: loadgen.Accounting{Echoed: 3000}},
				{Kind: "steady", Accounting: loadgen.Accounting{Echoed: 1000}},
			},
			Totals:      loadgen.Accounting{Echoed: 4000},
			Stop:        &loadgen.StopOutcome{Status: "acknowledged", LatencyUs: 777},
			HealthCheck: &loadgen.HealthCheck{FalseTimeouts: 2, FalseRemovals: 1},
			Urgent:      &loadgen.UrgentOutcome{Sent: 60, Answered: 50, Skipped: 3, Mismatched: 1},
			Churn:       &loadgen.ChurnOutcome{Refused: 3, Reset: 4, Skipped: 5},
		},
		Lab: &lab.Result{Mode: lab.ModeLab, Server: &lab.ProcResult{
			UserNs: 1.5e9, SysNs: 0.5e9, MaxRSS: 3 << 20, Elapsed: 5 * time.Second}},
		Server: &roles.ServeOutput{Stats: reactors.Stats{
			PerLoop: per, Imbalance: reactors.ImbalanceOf(per),
			Counters: reactors.Counters{FramesEchoed: 4000, IngressMaxDepth: 17, IdleWakeups: 400, ZeroTimeoutWaits: 80,
				Accepts: 40, UselessAcceptWakeups: 20},
			Histograms: map[string]reactors.HistSummary{
				reactors.HistRound:            {Count: 10, P99: 250_000, Max: 900_000},
				reactors.HistRotation:         {Count: 10, Max: 3_000_000},
				reactors.HistTimerLate:        {Count: 10, P99: 40_000},
				reactors.HistHandoff:          {Count: 40, P99: 70_000},
				reactors.HistHandoffFirstRead: {Count: 40, P99: 85_000},
			},
		}},
	}
	from := res.Load.StartTime.Add(res.Cell.Load.WithDefaults().Warmup)
	res.Lab.Server.AcceptQueue = &lab.AcceptQueue{Buckets: []lab.AcceptQueueBucket{{At: from, StepMs: 5, Sum: 7}}}
	res.Lab.Server.CPUTicks = []lab.CPUTicks{
		{At: from, Own: &lab.OwnTime{RunNs: 1e9, Slices: 1000}},
		{At: from.Add(time.Second), Own: &lab.OwnTime{RunNs: 1.4e9, Slices: 3000}},
	}
	res.LoopTimes = &diagnose.LoopTimes{Loops: []diagnose.ThreadShares{{Tid: 1, Waiting: 0.6, Serving: 0.3, Blocked: 0.05, Runnable: 0.05}}}
	return res, hlog, start.Add(warmup)
}

// TestCatalogueEveryEntryComputes: on a run every entry applies to, each
// computes a finite value; on a black box's run with data samples alone
// (no control probes, urgent bytes, churn or STOP, no accept queue
// samples, no peak RSS recorded), each entry without an Absent condition
// still computes, and each that is absent says when in Absent; on a run
// that left no load summary and no lab record, none computes.
func TestCatalogueEveryEntryComputes(t *testing.T) {
	res, hlog, from := representativeRun(t)
	m, err := results.ComputeMetrics(res, hlog, from)
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range results.Metrics {
		v, ok := m[metric.Name]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("representative run: %s = %v (present %v), want a finite value", metric.Name, v, ok)
		}
	}

	res.Server = nil
	res.Lab.Server.AcceptQueue, res.Lab.Server.MaxRSS = nil, 0
	s := res.Load
	s.Conns, s.Stop, s.HealthCheck, s.Urgent, s.Churn = nil, nil, nil, nil, nil
	for class := range s.Latency.Classes {
		if class != loadgen.ClassData {
			delete(s.Latency.Classes, class)
		}
	}
	m, err = results.ComputeMetrics(res, hlog, from)
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range results.Metrics {
		if _, ok := m[metric.Name]; !ok && metric.Absent == "" {
			t.Errorf("black box: %s is absent, and its entry names no condition for that", metric.Name)
		}
	}

	m, err = results.ComputeMetrics(&harness.CellResult{}, "", from)
	if err != nil || len(m) != 0 {
		t.Errorf("a run without a summary or a record: %v, %v; want no metric", m, err)
	}
}
