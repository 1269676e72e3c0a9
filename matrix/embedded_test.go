package matrix

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/stats"
)

// measured are wall times of whole suites on 2 cores (2026-12-01, lab
// mode, `reactorlab matrix SUITE` from start to exit, nothing else
// heavy running): what Estimate is calibrated against. (scaling needs 8
// CPUs: it is refused on 2, and has no measured time here.)
var measured = map[string]time.Duration{
	"quick":    2*time.Minute + 12*time.Second,
	"priority": 20*time.Minute + 25*time.Second,
}

// TestEmbeddedSuites parses every built-in suite and checks the time each
// promises: quick under 3 minutes, nightly under 45 on 2 cores, and the
// estimates of the suites measured within 10% of their measured times.
func TestEmbeddedSuites(t *testing.T) {
	bounds := map[string]time.Duration{"quick": 3 * time.Minute, "nightly": 45 * time.Minute}
	seen := map[string]bool{}
	for _, e := range EmbeddedSuites() {
		text, err := EmbeddedText(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		specs, err := ParseSuite([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		est := Estimate(specs, Shard{})
		t.Logf("%s: %d specs, about %v", e.Name, len(specs), est.Round(time.Second))
		if b, ok := bounds[e.Name]; ok && est > b {
			t.Errorf("%s: estimated %v, over its bound %v", e.Name, est, b)
		}
		if m, ok := measured[e.Name]; ok && (est < m*9/10 || est > m*11/10) {
			t.Errorf("%s: estimated %v, measured %v: more than 10%% apart", e.Name, est, m)
		}
		seen[e.Name] = true
		// Every spec must be able to give verdicts: in its report (Holm
		// over its factor cells per metric, a cell's R runs against the
		// pooled R·k baseline runs) and, in the nightly, in compare's gate
		// (Holm over every cell × gate metric, R runs against R).
		gates := 0
		for _, m := range results.Metrics {
			if m.Gate {
				gates++
			}
		}
		for _, s := range specs {
			checkCells(t, s)
			k := len(s.Expand()) - 1
			if p := stats.MinPValue(s.Repeats, s.Repeats*k) * float64(k); k > 0 && p >= results.DefaultAlpha {
				t.Errorf("%s/%s: %d repeats × %d cells: the report's smallest adjusted p is %.3g, no verdict possible", e.Name, s.Name, s.Repeats, k, p)
			}
			if e.Name != "nightly" {
				continue
			}
			if p := stats.MinPValue(s.Repeats, s.Repeats) * float64((k+1)*gates); p >= results.DefaultAlpha {
				t.Errorf("%s/%s: %d repeats × %d cells: compare's smallest adjusted p is %.3g, the gate cannot fire", e.Name, s.Name, s.Repeats, k+1, p)
			}
		}
	}
	for _, name := range []string{"quick", "design-notes", "priority", "peers", "peers-capacity", "scaling", "nightly"} {
		if !seen[name] {
			t.Errorf("no embedded suite %q", name)
		}
	}
	if _, err := EmbeddedText("nope"); err == nil || !strings.Contains(err.Error(), "accepted: quick") {
		t.Errorf("unknown suite: %v", err)
	}
}

// TestPeersSuitesNameThePeers: the peers suites' black-box cells are
// named by their labels, each beside its command.
func TestPeersSuitesNameThePeers(t *testing.T) {
	for _, suite := range []string{"peers", "peers-capacity"} {
		text, err := EmbeddedText(suite)
		if err != nil {
			t.Fatal(err)
		}
		specs, err := ParseSuite([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			var got []string
			for _, c := range s.Expand() {
				if c.Target.IsCommand() {
					got = append(got, c.ID+" "+c.Target.Command())
				}
			}
			want := []string{"reactor=gnet ./reactorlab-peers/gnet", "reactor=netpoll ./reactorlab-peers/netpoll", "reactor=stdlib ./reactorlab-peers/stdlib"}
			if !slices.Equal(got, want) {
				t.Errorf("%s/%s: black-box cells %q, want %q", suite, s.Name, got, want)
			}
		}
	}
}

// TestScalingSuite: the scaling suite needs what its header says, 8 CPUs
// (its largest cell's placement), varies cpus and loadgen_loops for lt
// and prio-thread, and is not part of the nightly suite.
func TestScalingSuite(t *testing.T) {
	text, err := EmbeddedText("scaling")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := ParseSuite([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	reactors := map[string]bool{}
	for _, s := range specs {
		need, factors := 0, map[string]bool{}
		for _, c := range s.Expand() {
			cpus, err := lab.ParsePlacement(c.Placement)
			if err != nil {
				t.Fatalf("%s: cell %s: %v", s.Name, c.ID, err)
			}
			need = max(need, cpus.Server.Len()+cpus.Client.Len())
			factors[c.Factor] = true
		}
		if need != 8 || !strings.Contains(text, "needs 8 CPUs") {
			t.Errorf("%s: its largest cell needs %d CPUs; the header says 8", s.Name, need)
		}
		if !factors["cpus"] || !factors["loadgen_loops"] || len(factors) != 3 {
			t.Errorf("%s: factors %v, want cpus and loadgen_loops", s.Name, factors)
		}
		reactors[s.Baseline.Target.Design()] = true
	}
	if !reactors["lt"] || !reactors["prio-thread"] {
		t.Errorf("scaling's reactors %v, want lt and prio-thread", reactors)
	}
	nightly, err := EmbeddedText("nightly")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(nightly, "name: scaling") {
		t.Errorf("the nightly suite runs scaling, which needs 8 CPUs")
	}
}
