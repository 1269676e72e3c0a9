//go:build linux

package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

// multiLoopResult is a mainsub cell's result whose every per-loop figure
// is known: an acceptor and two sub-loops over a 10 s server life, a
// handoff histogram, churn and a hot lead.
func multiLoopResult() *CellResult {
	per := []reactors.LoopStats{
		{Loop: 0, Role: reactors.RoleAcceptor, Conns: 1, Frames: 10, Busy: 0.05, CPU: 0.04, Wakeups: 5000, AcceptWakeups: 2000, Accepts: 3000,
			UselessAcceptWakeups: 100, Handoffs: 3000},
		{Loop: 1, Role: reactors.RoleSubLoop, Conns: 2000, Frames: 600000, Busy: 0.6, CPU: 0.5, Wakeups: 20000, HandoffsIn: 2000},
		{Loop: 2, Role: reactors.RoleSubLoop, Conns: 1000, Frames: 100000, Busy: 0.1, CPU: 0.1, Wakeups: 8000, HandoffsIn: 1000},
	}
	load := loadgen.Config{Hot: 2, InFlight: 16, HotLead: 500 * time.Millisecond, Steady: 8, Rate: 800, ChurnRate: 300, ChurnBurst: 4,
		Duration: 2 * time.Second, Warmup: time.Second}
	return &CellResult{
		Cell: CellSpec{Target: target.Design("mainsub"), Load: load},
		Lab:  &lab.Result{Mode: lab.ModeLab, Server: &lab.ProcResult{Elapsed: 10 * time.Second}},
		Load: &loadgen.Summary{Config: load, Churn: &loadgen.ChurnOutcome{Scheduled: 900, Opened: 880, Skipped: 20, Connected: 870, Refused: 10,
			Answered: 865, Reset: 5, MaxOpen: 12}},
		Server: &roles.ServeOutput{Stats: reactors.Stats{
			PerLoop: per, Imbalance: reactors.ImbalanceOf(per),
			Counters: reactors.Counters{Handoffs: 3000, HandoffFull: 3, HandoffBacklogMax: 2},
			Histograms: map[string]reactors.HistSummary{
				reactors.HistHandoff:          {Count: 3000, P50: 12_000, P99: 80_000, Max: 1_500_000},
				reactors.HistHandoffFirstRead: {Count: 3000, P50: 20_000, P99: 90_000, Max: 2_000_000},
			},
		}},
	}
}

// TestLoopRates: each loop's counts are divided by the server's life.
func TestLoopRates(t *testing.T) {
	rates := multiLoopResult().LoopRates()
	if len(rates) != 3 {
		t.Fatalf("%d loops, want 3", len(rates))
	}
	if a := rates[0]; a.WakeupsPerS != 500 || a.AcceptWakeupsPerS != 200 || a.UselessAcceptWakeupsPS != 10 || a.LifeS != 10 {
		t.Errorf("acceptor: %+v", a)
	}
	if s := rates[1]; s.WakeupsPerS != 2000 || s.Conns != 2000 {
		t.Errorf("sub-loop 1: %+v", s)
	}
	noLife := multiLoopResult()
	noLife.Lab = nil
	if r := noLife.LoopRates(); r[1].WakeupsPerS != 0 {
		t.Errorf("no life known: rate %v, want none", r[1].WakeupsPerS)
	}
	if r := (&CellResult{}).LoopRates(); r != nil {
		t.Errorf("black box: %v", r)
	}
}

// TestSummaryShowsLoops: the text summary has the per-loop table, the
// imbalance, the handoff latency, the churn ledger and class, and the hot
// lead in the load's line.
func TestSummaryShowsLoops(t *testing.T) {
	var b strings.Builder
	if err := multiLoopResult().WriteSummary(&b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"(connected 500ms before the others)",
		"churn 300 connections/s in bursts of 4 (at most 256 open)",
		"acceptor", "sub-loop", "3,000 out", "2,000 in",
		"  60%",       // sub-loop 1's busy
		"2000", "500", // wakeups/s of sub-loop 1 and the acceptor
		"2 data loops: busy max/mean 1.71, CPU max/mean 1.67; Jain's index of frames 0.662, of connections 0.900",
		"accept to registration on the sub-loop: p50 12µs, p99 80µs, max 1.5ms (3,000 connections)",
		"accept to the sub-loop's first read: p50 20µs, p99 90µs, max 2ms (3,000 connections)",
		"ingress full 3 times, backlog peak 2 connections",
		"scheduled 900 = opened 880 + skipped 20", "refused 10", "reset 5", "at most 12 open",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// A one-loop reactor's summary has none of it.
	one := multiLoopResult()
	one.Server.PerLoop, one.Server.Imbalance, one.Server.Histograms = one.Server.PerLoop[:1], nil, nil
	b.Reset()
	if err := one.WriteSummary(&b, false); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"Imbalance", "Handoff", "wakeups/s"} {
		if strings.Contains(b.String(), absent) {
			t.Errorf("one loop: summary has %q:\n%s", absent, b.String())
		}
	}
}

// TestSummaryShowsAcceptQueue: the peak with each listener's, or why there
// is none.
func TestSummaryShowsAcceptQueue(t *testing.T) {
	q := &lab.AcceptQueue{Port: 80, EveryMs: 5, Samples: 400, Listeners: 4, Backlog: 4096}
	for _, c := range []struct {
		q      *lab.AcceptQueue
		p      lab.AcceptQueuePeak
		inside bool
		want   string
	}{
		{q, lab.AcceptQueuePeak{Sum: 2300, PerListener: []uint32{600, 500, 700, 500}, Buckets: 20}, true,
			"peak 2,300 connections waiting (4 listeners: 600, 500, 700, 500; backlog 4096), measured period, sampled every 5 ms: a lower bound"},
		{q, lab.AcceptQueuePeak{}, false, "no sample inside the measured period (400 samples)"},
		{&lab.AcceptQueue{Error: "accept queue: inet_diag socket: EPERM"}, lab.AcceptQueuePeak{}, false, "not sampled: accept queue: inet_diag socket: EPERM"},
	} {
		var b strings.Builder
		writeAcceptQueue(&b, c.q, c.p, c.inside)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("got %q, want %q", b.String(), c.want)
		}
	}
	var b strings.Builder
	writeAcceptQueue(&b, nil, lab.AcceptQueuePeak{}, false)
	if b.Len() != 0 {
		t.Errorf("no record: %q", b.String())
	}
}
