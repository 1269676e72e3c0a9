//go:build linux

package conformance_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// built returns the path of a binary built from pkg (relative to the
// module root) once per test run.
func built(t *testing.T, name, pkg string) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "reactorlab-conformance-")
		if buildErr != nil {
			return
		}
		// go test puts its own GOROOT/bin first on PATH.
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		for _, b := range [][2]string{{"reactorlab", "../cmd/reactorlab"}, {"echo", "../examples/echo"}} {
			out, err := exec.Command(goBin, "build", "-o", filepath.Join(buildDir, b[0]), b[1]).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b[1], err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// The catalogue and the fault types must agree: every case names the
// reactor faults that must fail it, and each of those faults names the
// case; every case has at least one.
func TestCatalogueMatchesFaults(t *testing.T) {
	byCase := map[string][]string{}
	for _, f := range faults.Reactors() {
		for _, id := range f.Cases() {
			byCase[id] = append(byCase[id], f.Name())
		}
	}
	for _, c := range conformance.Catalogue() {
		got := slices.Clone(c.Mutants)
		sort.Strings(got)
		want := byCase[c.ID]
		sort.Strings(want)
		if len(got) == 0 && len(c.BlackBoxBugs) == 0 {
			t.Errorf("%s has no mutant (nor examples/echo bug) that must fail it", c.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: catalogue says mutants %v, the fault types say %v", c.ID, got, want)
		}
		for _, w := range c.WireFaults {
			if _, err := faults.ParseWire(w); err != nil {
				t.Errorf("%s: wire fault %q: %v", c.ID, w, err)
			}
		}
	}
}

// Every entry of the mutant registry (reactors.Mutants) has its rows in the
// mutation table: it is a reactor fault, it must be caught on at least one
// design, and each case it names is in the catalogue, which names it back.
// A new mutant cannot skip TestEveryMutantIsCaught.
func TestEveryMutantHasConformanceRows(t *testing.T) {
	cases := map[string]conformance.Case{}
	for _, c := range conformance.Catalogue() {
		cases[c.ID] = c
	}
	rows := map[string]int{}
	for _, f := range faults.Reactors() {
		for _, d := range designs.Names() {
			if len(f.CasesFor(d)) > 0 {
				rows[f.Name()]++
			}
		}
	}
	for _, m := range reactors.Mutants {
		if rows[m.Name] == 0 {
			t.Errorf("mutant %s has no row in the mutation table (no design with cases among faults.Reactors)", m.Name)
		}
		for _, id := range m.Cases {
			c, ok := cases[id]
			switch {
			case !ok:
				t.Errorf("mutant %s names case %s, which is not in the catalogue", m.Name, id)
			case !slices.Contains(c.Mutants, m.Name):
				t.Errorf("mutant %s names case %s, whose catalogue entry lists mutants %v", m.Name, id, c.Mutants)
			}
		}
	}
}

// TestEveryMutantIsCaught is the mutation table: for every reactor fault
// and every reference design it applies to, the cases the fault names all
// fail, and fail on their claim (not because the mutant did not start,
// stalled past the watchdog, or crashed). That every clean design passes
// is TestInProcessReference and TestProcessReference. R4 needs a process
// of its own, so its mutant runs as a child process; I2's runs both ways
// on lt (live counters in-process, the process's sockets as a child) and
// in-process on the other designs (the child's sockets are the same
// check whatever the design, and take 5 s a design); the rest
// run in-process.
func TestEveryMutantIsCaught(t *testing.T) {
	var table []string
	for _, f := range faults.Reactors() {
		for _, d := range designs.Names() {
			want := f.CasesFor(d)
			if len(want) == 0 {
				continue
			}
			t.Run(f.Name()+"/"+string(d), func(t *testing.T) {
				cfg := reactors.DefaultConfig()
				f.Switch(&cfg.Faults)
				inProcess := conformance.InProcess{Design: d, Config: &cfg}
				child := conformance.Process{Design: d, Config: &cfg, Command: []string{built(t, "reactorlab", "")}}
				var targets []conformance.Target
				switch {
				case slices.Contains(want, "R4"):
					targets = []conformance.Target{child}
				case slices.Contains(want, "I2") && d == reactors.LT:
					targets = []conformance.Target{inProcess, child}
				default:
					targets = []conformance.Target{inProcess}
				}
				var row []string
				for _, target := range targets {
					results, err := conformance.RunAll(context.Background(), target, conformance.Options{Cases: want})
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range results {
						row = append(row, fmt.Sprintf("%s %s (%s)", r.ID, r.Verdict, r.Cause))
						if r.Verdict != conformance.Fail || r.Cause != conformance.CauseClaim {
							t.Errorf("mutant %s on %s: %s %s (%s): %s (want a claim failure)\n%s", target.Name(), d, r.ID, r.Verdict, r.Cause, r.Reason, strings.Join(r.Evidence, "\n"))
						} else {
							t.Logf("%s caught: %s", r.ID, r.Reason)
						}
					}
				}
				table = append(table, fmt.Sprintf("%-20s %-12s %s", f.Name(), d, strings.Join(row, ", ")))
			})
		}
	}
	t.Logf("mutation table:\n%s", strings.Join(table, "\n"))
}

// processPaths are the cases whose path differs, design by design, for a
// reference reactor run as a process (reactorlab serve) from the same
// reactor in-process: the accept path at a descriptor limit of its own
// (R4), its sockets (I2), its final statistics arriving with its exit
// (X1, X2), and, for a design with several loops, the serve child's loop
// flags, its threads in /proc (M4) and every loop's stop (the M group;
// M5 on prio-thread too). What a process adds whatever the design — its
// CPU and memory measured from /proc (W1, W2), the rest of the
// catalogue through the same socket — lt runs in full, and
// TestInProcessReference runs the whole catalogue on every design.
func processPaths(d reactors.Design) []string {
	ids := []string{"R4", "I2", "X1", "X2"}
	switch d {
	case reactors.MainSub, reactors.ReusePort, reactors.SharedListener:
		ids = append(ids, "M")
	case reactors.PrioThread:
		ids = append(ids, "M5")
	}
	return ids
}

// TestProcessReference runs the whole catalogue on lt as a process, and
// processPaths on every other design: the suite's time goes to what the
// process adds, not to repeating TestInProcessReference (the whole
// catalogue on all eight designs as processes would take ~170 s, against
// CI's 8 minutes for all of go test ./...).
func TestProcessReference(t *testing.T) {
	exe := built(t, "reactorlab", "")
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			opts := conformance.Options{Strict: true}
			if d != reactors.LT {
				opts.Cases = processPaths(d)
			}
			conformance.Run(t, conformance.Process{Design: d, Command: []string{exe}}, opts)
		})
	}
}
