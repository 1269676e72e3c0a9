//go:build linux

package peertruth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
	"github.com/reactorlab/reactorlab/conformance/peertruth"
)

// peersRoot is where the peers live, from this package's directory.
const peersRoot = "../../examples/peers"

// TestPeersTruth runs the catalogue against every peer under examples/peers
// with a .peer file and fails on every verdict that is not the stated
// truth (a true failure must also be a claim failure, not a crash or a
// stall). A peer whose runtime or library is missing here is skipped with
// the reason; .ci/run installs them. With -short, none runs (31 peers'
// builds and starts take 20 s; TestParse checks their files) unless
// REACTORLAB_PEERS or REACTORLAB_PEERS_CASES selects some, and then each
// selected peer runs R1 alone unless cases are named; a peer whose file
// says "runs:" (a variant of another, or a peer whose whole catalogue is
// too slow for CI) runs only those, unless REACTORLAB_PEERS_FULL=1, which
// runs every peer's whole catalogue. A peer whose whole catalogue runs
// leaves out the P group unless its library is io_uring
// (withoutCompletionCases). REACTORLAB_PEERS (names,
// comma-separated) selects peers, REACTORLAB_PEERS_CASES (case IDs) the
// cases every selected peer runs, whatever its "runs:" says.
func TestPeersTruth(t *testing.T) {
	paths, err := peertruth.Find(peersRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no .peer file under %s", peersRoot)
	}
	var only []string
	if s := os.Getenv("REACTORLAB_PEERS"); s != "" {
		only = strings.Split(s, ",")
	}
	full := os.Getenv("REACTORLAB_PEERS_FULL") == "1"
	var onlyCases []string
	if s := os.Getenv("REACTORLAB_PEERS_CASES"); s != "" {
		onlyCases = strings.Split(s, ",")
	}
	if testing.Short() && only == nil && onlyCases == nil {
		t.Skip("-short: the peers run in the full tier (or name them in REACTORLAB_PEERS)")
	}
	binDir := t.TempDir()
	var (
		mu    sync.Mutex
		table []string
	)
	// The peers run two at a time (-parallel, GOMAXPROCS on two cores),
	// each server a process of its own: a truth must hold with the other
	// core busy. The table is logged once every peer has run.
	t.Cleanup(func() {
		slices.Sort(table)
		t.Logf("verdicts:\n%s", strings.Join(table, "\n"))
	})
	for _, path := range paths {
		p, err := peertruth.Load(path)
		if err != nil {
			t.Error(err)
			continue
		}
		if only != nil && !slices.Contains(only, p.Name) {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			if why := p.Missing(); why != "" {
				t.Skipf("%s: %s (.ci/run installs what the peers need)", p.Name, why)
			}
			target, err := p.Target(binDir)
			if err != nil {
				t.Fatal(err)
			}
			ids := p.Runs
			switch {
			case onlyCases != nil:
				ids = onlyCases
			case full:
				ids = nil
			}
			if ids == nil && !full && onlyCases == nil && !strings.Contains(p.Library, "io_uring") {
				ids = withoutCompletionCases()
			}
			if testing.Short() && onlyCases == nil {
				ids = []string{"R1"} // the peer builds, starts and is judged: the truths run without -short
			}
			selected, err := cases.Select(ids)
			if err != nil {
				t.Fatal(err)
			}
			results, err := conformance.RunAll(context.Background(), target, selected, conformance.Options{Stop: p.Stop})
			if err != nil {
				t.Fatal(err)
			}
			var row []string
			for _, r := range results {
				row = append(row, fmt.Sprintf("%s %s", r.ID, r.Verdict))
				if r.Verdict == conformance.Fail && p.Truth[r.ID].Allows(conformance.Fail) && r.Cause != conformance.CauseClaim {
					t.Errorf("%s: %s failed with cause %s, not on its claim: %s\n%s", p.Name, r.ID, r.Cause, r.Reason, strings.Join(r.Evidence, "\n"))
				}
				if r.Verdict == conformance.Fail || r.Verdict == conformance.Inconclusive {
					t.Logf("%s %s: %s\n    %s", r.ID, r.Verdict, r.Reason, strings.Join(r.Evidence, "\n    "))
				}
			}
			for _, m := range p.Compare(results) {
				t.Errorf("%s (%s): %v\n%s", p.Name, filepath.Base(p.Path), m, m.Evidence)
			}
			mu.Lock()
			table = append(table, fmt.Sprintf("%-28s %s", p.Name, strings.Join(row, ", ")))
			mu.Unlock()
		})
	}
}

// Every peer a case names as one that must fail it (Case.PeerBugs) has a
// .peer file whose truth for that case is a failure, never a pass, and
// TestPeersTruth runs that case on it (its "runs:" names it, or runs
// everything): the real program with the bug is what fails the case.
func TestPeerBugsAreTruths(t *testing.T) {
	paths, err := peertruth.Find(peersRoot)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]peertruth.Peer{}
	for _, path := range paths {
		p, err := peertruth.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		byName[p.Name] = p
	}
	for _, cs := range cases.Catalogue() {
		for _, name := range cs.PeerBugs {
			p, ok := byName[name]
			switch {
			case !ok:
				t.Errorf("%s names peer %s, which has no .peer file under %s", cs.ID, name, peersRoot)
			case !p.Truth[cs.ID].Allows(conformance.Fail) || p.Truth[cs.ID].Allows(conformance.Pass):
				t.Errorf("%s names peer %s as one that must fail it, but its truth is %s (%s)", cs.ID, name, p.Truth[cs.ID], filepath.Base(p.Path))
			case len(p.Runs) > 0 && !slices.Contains(p.Runs, cs.ID):
				t.Errorf("%s names peer %s as one that must fail it, but its runs: (%s) leaves %s out", cs.ID, name, strings.Join(p.Runs, " "), cs.ID)
			}
		}
	}
}

// withoutCompletionCases is the catalogue's ids without the P group. By
// default a peer whose whole catalogue runs leaves out the P group (the
// completion model's cases, a few hundred connections each) unless its
// library is io_uring: every peer's P truths are stated, and held to with
// REACTORLAB_PEERS_FULL=1 or REACTORLAB_PEERS_CASES=P1,P2,P3,P4 (every
// peer passed them so on 2026-12-06); on the readiness peers they cost
// about 30 s of CI's 8 minutes and take paths the rest of the catalogue
// already takes.
func withoutCompletionCases() []string {
	var ids []string
	for _, c := range cases.Catalogue() {
		if c.Group() != "P" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}
