//go:build linux

package matrix

import (
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
)

// TestMultiloopSuite: the multiloop suite parses, holds the three
// experiments with the factors its header names, every planned run's cell
// is one the harness accepts, it fits in 10 minutes, says that the loops
// share the server's CPU here, and is not part of the nightly suite.
func TestMultiloopSuite(t *testing.T) {
	text, err := EmbeddedText("multiloop")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := ParseSuite([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		reactor string
		factors string
	}{
		"multiloop-accept-bursts":    {"shared", "exclusive=off reactor=mainsub reactor=reuseport"},
		"multiloop-uneven-load":      {"mainsub", "assign=least-conns assign=least-loaded"},
		"multiloop-cloudflare-shape": {"shared", "reactor=reuseport"},
	}
	if len(specs) != len(want) {
		t.Fatalf("%d specs, want %d", len(specs), len(want))
	}
	for _, s := range specs {
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected spec %s", s.Name)
			continue
		}
		var ids []string
		for _, c := range s.Expand()[1:] {
			ids = append(ids, c.ID)
		}
		if got := strings.Join(ids, " "); got != w.factors || s.Baseline.Target.Design() != w.reactor {
			t.Errorf("%s: baseline %s, cells %q; want %s, %q", s.Name, s.Baseline.Target, got, w.reactor, w.factors)
		}
		if s.Baseline.Loops < 3 {
			t.Errorf("%s: %d loops", s.Name, s.Baseline.Loops)
		}
		if _, err := harnessCells(s.Plan(Shard{}), Options{Spec: s, Dir: t.TempDir()}); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	if est := Estimate(specs, Shard{}); est > 10*time.Minute {
		t.Errorf("estimated %v, over 10 minutes", est)
	}
	if !strings.Contains(text, "SHARE one CPU") || !strings.Contains(text, "--cpus server=0-3,loadgen=4-7") {
		t.Errorf("the header does not say that the loops share the server's CPU here, or how to run it on a bigger machine")
	}
	nightly, err := EmbeddedText("nightly")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(nightly, "name: multiloop") {
		t.Errorf("the nightly suite runs multiloop")
	}
}

// TestEstimateCountsHotLead: a run's hot lead is part of its time.
func TestEstimateCountsHotLead(t *testing.T) {
	plan := []PlannedRun{{Cell: Cell{Settings: Settings{Load: loadgen.Config{HotLead: 500 * time.Millisecond, Warmup: time.Second, Duration: 4 * time.Second}}}}}
	if got, want := EstimatePlan(plan), 5500*time.Millisecond+runOverhead+specOverhead; got != want {
		t.Errorf("estimate %v, want %v", got, want)
	}
}
