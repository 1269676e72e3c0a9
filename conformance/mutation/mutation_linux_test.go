//go:build linux

package mutation_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// Every case has a fault that must fail it: a reactor fault (the
// registry names the case: the catalogue's Mutants come from there), an
// examples/echo bug or a peer whose truth is its failure (that the peer's
// .peer file says so is conformance/peertruth's TestPeerBugsAreTruths);
// and its wire faults parse.
func TestCatalogueMatchesFaults(t *testing.T) {
	for _, c := range cases.Catalogue() {
		if len(c.Mutants) == 0 && len(c.BlackBoxBugs) == 0 && len(c.PeerBugs) == 0 {
			t.Errorf("%s has no mutant (nor examples/echo bug, nor peer) that must fail it", c.ID)
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
// design, and each case it names is in the catalogue. A new mutant cannot
// skip TestEveryMutantIsCaught.
func TestEveryMutantHasConformanceRows(t *testing.T) {
	catalogue := map[string]conformance.Case{}
	for _, c := range cases.Catalogue() {
		catalogue[c.ID] = c
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
			if _, ok := catalogue[id]; !ok {
				t.Errorf("mutant %s names case %s, which is not in the catalogue", m.Name, id)
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
// run in-process, in three shards side by side (shardEnv). It is not part of
// -short, the tier a person runs while changing code (about two minutes
// of mutants): TestCatalogueMatchesFaults and
// TestEveryMutantHasConformanceRows still check the table is whole.
func TestEveryMutantIsCaught(t *testing.T) {
	if testing.Short() && os.Getenv(shardEnv) == "" {
		t.Skip("-short: the mutation table runs without -short")
	}
	if shard := os.Getenv(shardEnv); shard != "" {
		runShard(t, shard)
		return
	}
	// Every shard starts at once, whatever -test.parallel allows: each is
	// a process of its own that mostly waits on its mutants' sockets.
	// Each ends before this test's own deadline, by its -test.timeout or,
	// failing that, by SIGKILL.
	ctx, args := context.Background(), []string{"-test.run=^TestEveryMutantIsCaught$", "-test.v", "-test.count=1"}
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-5*time.Second))
		defer cancel()
		args = append(args, fmt.Sprintf("-test.timeout=%v", time.Until(dl)-10*time.Second))
	}
	outs, errs := make([][]byte, shards), make([]error, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, os.Args[0], args...)
			cmd.WaitDelay = 5 * time.Second
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d", shardEnv, i, shards))
			outs[i], errs[i] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for i := range shards {
		t.Run(fmt.Sprintf("shard-%d-of-%d", i+1, shards), func(t *testing.T) {
			if errs[i] != nil {
				t.Errorf("shard %d of %d (a test process of its own): %v\n%s", i+1, shards, errs[i], outs[i])
				return
			}
			t.Logf("%s", tableOf(outs[i]))
		})
	}
}

// The mutation table runs in shards, each a test process of its own
// (this test binary, run again with shardEnv set to "i/n": rows i, i+n,
// …): its mutants run in-process, and two in-process reactors must not
// share a process (an in-process target raises the process's GOMAXPROCS,
// and F4 reads the process's allocations), so the shards are what lets
// go test run the table three rows at a time (its rows mostly wait on
// their sockets: beside the cases package, 92 s in three shards where
// two took 125 s).
const (
	shardEnv = "REACTORLAB_MUTATION_SHARD"
	shards   = 3
)

// mutantRetries is how many more times a mutant's case that ended
// inconclusive runs (conformance.Options.Retries): the table wants a
// claim failure, and on a machine shared with other work whether one
// attempt establishes the precondition is a draw of timing (W4 on
// flush-spin-at-eof: the kernel's send buffer grew to take every echo,
// so the server was not seen holding them to the end). A pass is never
// run again: a mutant that passes is a mutant the suite missed.
const mutantRetries = 2

// tableMark starts the mutation table in a shard's output.
const tableMark = "mutation table:"

// tableOf is the mutation table in a shard's output (all of it if the
// table is not found).
func tableOf(out []byte) string {
	if i := bytes.Index(out, []byte(tableMark)); i >= 0 {
		out = out[i:]
		if j := bytes.Index(out, []byte("\n--- ")); j >= 0 {
			out = out[:j]
		}
	}
	return string(bytes.TrimSpace(out))
}

// runShard runs rows i, i+n, … of the mutation table, shard being "i/n".
func runShard(t *testing.T, shard string) {
	var i, n int
	if _, err := fmt.Sscanf(shard, "%d/%d", &i, &n); err != nil || n <= 0 || i < 0 || i >= n {
		t.Fatalf("%s=%q: want i/n with 0 <= i < n", shardEnv, shard)
	}
	row := -1
	var table []string
	for _, f := range faults.Reactors() {
		for _, d := range designs.Names() {
			want := f.CasesFor(d)
			if len(want) == 0 {
				continue
			}
			if row++; row%n != i {
				continue
			}
			t.Run(f.Name()+"/"+string(d), func(t *testing.T) {
				cfg := reactors.DefaultConfig()
				f.Switch(&cfg.Faults)
				inProcess := conformance.InProcess{Design: d, Config: &cfg}
				child := conformance.Process{Design: d, Config: &cfg, Command: []string{testbin.Path(t, "cmd/reactorlab")}}
				var targets []conformance.Target
				switch {
				case slices.Contains(want, "R4"):
					targets = []conformance.Target{child}
				case slices.Contains(want, "I2") && d == reactors.LT:
					targets = []conformance.Target{inProcess, child}
				default:
					targets = []conformance.Target{inProcess}
				}
				selected, err := cases.Select(want)
				if err != nil {
					t.Fatal(err)
				}
				var row []string
				for _, target := range targets {
					results, err := conformance.RunAll(context.Background(), target, selected, conformance.Options{Retries: mutantRetries})
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
	t.Logf("%s (shard %d of %d)\n%s", tableMark, i+1, n, strings.Join(table, "\n"))
}
