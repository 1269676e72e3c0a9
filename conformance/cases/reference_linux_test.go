//go:build linux

package cases_test

import (
	"os"
	"slices"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// TestInProcessReference runs the whole catalogue on every one-loop
// epoll design, on uring ringPaths (with REACTORLAB_URING_CATALOGUE=1,
// all but sharedLoopPaths, where its path is lt's), on the multi-loop
// proactors uringMultiPaths (with REACTORLAB_URING_CATALOGUE=1, the whole
// catalogue), and on the multi-loop epoll designs all but the cases that measure
// one loop's own scheduling and fd reuse (oneLoopPaths): their loops run
// lt's policy, which lt is held to in full; what they add — their
// listeners, the handoff, several loops, STOP across them, stale results
// across them — is the rest of the catalogue and the M group. mainsub
// keeps S2: its control connections are on the acceptor, not a data loop.
// P3 runs on lt and uring alone (ltOnlyPaths), and on the multi-loop
// proactors with the opt-in. With -short, every design without
// slowPaths, and without halfSecondPaths but on lt and mainsub, and
// without completionPaths but on lt.
func TestInProcessReference(t *testing.T) {
	t.Parallel() // beside the other runs of whole catalogues: see TestMain
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			var ids []string
			switch d {
			case reactors.ReusePort, reactors.SharedListener:
				ids = allBut(oneLoopPaths)
			case reactors.MainSub:
				ids = allBut(slices.DeleteFunc(slices.Clone(oneLoopPaths), func(id string) bool { return id == "S2" }))
			case reactors.Uring:
				if err := reactors.ProbeCompletion(); err != nil {
					t.Skipf("%s: %v", d, err)
				}
				ids = uringPaths()
			case reactors.UringReusePort, reactors.UringMainSub:
				if err := reactors.ProbeCompletion(); err != nil {
					t.Skipf("%s: %v", d, err)
				}
				ids = uringMultiPaths(d)
			}
			wholeOnRings := designs.Completion(d) && os.Getenv(uringCatalogueEnv) == "1"
			ids = shortTier(ids)
			if testing.Short() && d != reactors.LT && d != reactors.MainSub {
				ids = slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(halfSecondPaths, id) })
			}
			if testing.Short() && d != reactors.LT || d != reactors.LT && d != reactors.MainSub && !designs.Completion(d) {
				ids = withoutCompletionPaths(ids)
			}
			if d != reactors.LT && d != reactors.Uring && !wholeOnRings {
				ids = slices.DeleteFunc(allButNil(ids), func(id string) bool { return slices.Contains(ltOnlyPaths, id) })
			}
			conformance.Run(t, conformance.InProcess{Design: d}, mustSelect(t, ids), conformance.Options{Strict: true, Retries: referenceRetries})
		})
	}
}

// oneLoopPaths are the cases whose claim is about one loop's scheduling
// (S1, S2, T1, A1, W4, W5) or its own fd reuse (I1): about 16 s of the
// 24–27 s a design takes.
var oneLoopPaths = []string{"S1", "S2", "T1", "A1", "W4", "W5", "I1"}

// ltOnlyPaths are the cases that run in process on lt and uring alone:
// P3, whose claim (a reused number never gets the old connection's
// result) rests on a readiness design's source identity, which I1 holds
// every one-loop epoll design to (and P3 takes half a second to a second
// a design), while on uring it is the completion path's own claim;
// TestProcessReference runs it on lt as a process too.
var ltOnlyPaths = []string{"P3"}

// allButNil is ids, or the whole catalogue's ids for nil.
func allButNil(ids []string) []string {
	if ids == nil {
		return allBut(nil)
	}
	return ids
}

// completionPaths are the completion-model cases (P: P1 and P2 open a
// few hundred connections, P3 and P4 take half a second or so): in
// process they run on lt, mainsub (several loops) and uring (the
// completion design), whose paths the other epoll designs share for
// what P tests; with -short on lt alone, and every other run of the
// tier leaves them out.
var completionPaths = []string{"P1", "P2", "P3", "P4"}

// withoutCompletionPaths is ids (nil: the whole catalogue, as shortTier
// leaves it) without completionPaths.
func withoutCompletionPaths(ids []string) []string {
	if ids == nil {
		ids = shortTier(nil)
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(completionPaths, id) })
}

// sharedLoopPaths are the cases whose path on uring, the completion design,
// is the shared loop's, the same as on lt, which runs them in full: an
// offloaded result comes back through the ingress, routed by slot and
// generation (I1), admission refuses DATA where every frame is handled
// (A1), and the M group's claims about several loops hold trivially on one
// (M2, M4): about 13 s of the 28 s the whole catalogue takes on uring.
// What the ring changes — reading, writing, accepting, closing, the stop,
// the scheduling of turns by completion — is the rest of the catalogue.
var sharedLoopPaths = []string{"I1", "A1", "M2", "M4"}

// ringPaths are the cases uring runs in process by default: those whose
// path the ring changes and that take under a second and a half there —
// framing, readiness and accept, the write path's watermarks, partial sends
// and an idle ring, EOF, cross-thread results, STOP and its ledger, and
// the completion model's own claims, P1–P4 (about 5 s, and 2 s for P). The rest of allBut(sharedLoopPaths) — the scheduling of turns under
// hot load (S1, S2, T1), peers that stop reading (W4, W5), a reset with
// work pending (I2, in TestProcessReference) — takes as long again, and
// runs with REACTORLAB_URING_CATALOGUE=1 (the whole catalogue, strict, 20
// times with the other core busy, is what the design was held to: see
// docs/ARCHITECTURE.md, section 5).
var ringPaths = []string{"F1", "F2", "F3", "F4", "R1", "R2", "R3", "W1", "W2", "W3", "I3", "S3", "X1", "X2", "M1", "M5", "P1", "P2", "P3", "P4"}

// uringCatalogueEnv opts in to the catalogue on uring beyond ringPaths.
const uringCatalogueEnv = "REACTORLAB_URING_CATALOGUE"

// ringShortPaths are ringPaths with -short: framing, readiness and
// accept, EOF and the stop's ledger, each a few instance starts.
var ringShortPaths = []string{"F2", "F3", "F4", "R1", "R2", "R3", "I3", "X2"}

// uringMultiPaths are the cases TestInProcessReference runs on the
// multi-loop proactors, uring-reuseport and uring-mainsub: with
// REACTORLAB_URING_CATALOGUE=1 the whole catalogue (nil); by default what
// a ring per loop adds to uring's path and to their epoll twins' layouts —
// the accept storm across rings and, on uring-mainsub, the handoff to a
// sub-loop that arms the receive on its own ring (M1), every ring's loop
// seeing the stop (M5), each loop's own buffer ring running dry and its
// completion queue overflowing (P1, P2), the stop's ledger across loops
// (X2), and on uring-mainsub, which deals the old and the new connection
// to different sub-loops every time, a result routed by slot and
// generation on the loop that owns the connection (M3; reuseport's flow
// hash does so half the time, and M3 retries until it does: seconds); with
// -short, M5 and X2. What one ring does with a connection is uring's, held
// to ringPaths by default; their layouts are held to the catalogue on
// reuseport and mainsub.
func uringMultiPaths(d reactors.DesignName) []string {
	switch {
	case os.Getenv(uringCatalogueEnv) == "1":
		return nil
	case testing.Short():
		return []string{"M5", "X2"}
	case d == reactors.UringMainSub:
		return []string{"M1", "M3", "M5", "P1", "P2", "X2"}
	}
	return []string{"M1", "M5", "P1", "P2", "X2"}
}

// uringPaths are the cases TestInProcessReference runs on uring.
func uringPaths() []string {
	switch {
	case os.Getenv(uringCatalogueEnv) == "1":
		return allBut(sharedLoopPaths)
	case testing.Short():
		return ringShortPaths
	}
	return ringPaths
}

// halfSecondPaths are the cases of half a second or more in process (per
// design, on average: W3 0.7 s, M4 0.7, W2 0.6, W1 0.5, F1 0.4, M2 0.3):
// with -short they run on lt and mainsub alone (one loop, and several),
// so that every design still runs the rest of the catalogue.
var halfSecondPaths = []string{"W3", "M4", "W2", "W1", "F1", "M2"}

// slowPaths are the cases that take a second or more on lt (I1 4.5 s, A1
// 3.5 s, the rest 1–1.6 s): left out with -short, the tier a person runs
// while changing code, so that each design still runs once, on the rest.
var slowPaths = []string{"I1", "A1", "W4", "W5", "S1", "S2", "T1", "I2", "X1"}

// shortTier is ids (nil: the whole catalogue) as the test runs them:
// with -short, without slowPaths.
func shortTier(ids []string) []string {
	if !testing.Short() {
		return ids
	}
	if ids == nil {
		return allBut(slowPaths)
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(slowPaths, id) })
}

// mustSelect is the catalogue's cases named by ids (nil: all of them),
// or fails t.
func mustSelect(t *testing.T, ids []string) []conformance.Case {
	t.Helper()
	selected, err := cases.Select(ids)
	if err != nil {
		t.Fatal(err)
	}
	return selected
}

// allBut is every case id of the catalogue but those in ids.
func allBut(ids []string) []string {
	var out []string
	for _, c := range cases.Catalogue() {
		if !slices.Contains(ids, c.ID) {
			out = append(out, c.ID)
		}
	}
	return out
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
// TestInProcessReference runs the whole catalogue on every design. The
// multi-loop proactors run M4 by default, and with
// REACTORLAB_URING_CATALOGUE=1 the multi-loop list and the SIGTERM cases
// (X3–X5), which an in-process target skips: with that opt-in the two
// tests together run every case of the catalogue on them.
func processPaths(d reactors.DesignName) []string {
	ids := []string{"R4", "I2", "X1", "X2"}
	switch d {
	case reactors.MainSub, reactors.ReusePort, reactors.SharedListener:
		ids = append(ids, "M")
	case reactors.PrioThread:
		ids = append(ids, "M5")
	case reactors.UringReusePort, reactors.UringMainSub:
		ids = append(ids, "M", "X3", "X4", "X5")
		if os.Getenv(uringCatalogueEnv) != "1" {
			// The serve child's loops, each a thread with a ring of its
			// own (M4); the rest of processPaths is uring's and its epoll
			// twin's, and runs with the opt-in, with the SIGTERM cases
			// (X3–X5: teardown with operations in flight on every ring).
			ids = []string{"M4"}
		}
	case reactors.Uring:
		if os.Getenv(uringCatalogueEnv) == "1" {
			ids = append(ids, "X3", "X4", "X5") // SIGTERM with operations in flight
		} else {
			// X1 and X2 run in process (ringPaths); the accept path at
			// a descriptor limit of its own and a reset's descriptors are
			// the ring's own here.
			ids = []string{"R4", "I2"}
		}
	}
	return ids
}

// TestProcessReference runs the whole catalogue on lt as a process, and
// processPaths on every other design (with REACTORLAB_URING_CATALOGUE=1,
// the completion designs under the SIGTERM stop contract too, so that X3–X5
// run on them): the suite's time goes to what the
// process adds, not to repeating TestInProcessReference (the whole
// catalogue on all eight designs as processes would take ~170 s, against
// CI's 8 minutes for all of go test ./...). With -short, lt alone, without
// slowPaths nor completionPaths.
func TestProcessReference(t *testing.T) {
	t.Parallel() // beside the other runs of whole catalogues: see TestMain
	exe := testbin.Path(t, "cmd/reactorlab")
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			if designs.Completion(d) {
				if err := reactors.ProbeCompletion(); err != nil {
					t.Skipf("%s: %v", d, err)
				}
			}
			if testing.Short() && d != reactors.LT {
				t.Skip("-short: lt alone as a process (TestInProcessReference runs every design)")
			}
			var ids []string
			if d != reactors.LT {
				ids = processPaths(d)
			}
			ids = shortTier(ids)
			if testing.Short() {
				ids = withoutCompletionPaths(ids)
			}
			opts := conformance.Options{Strict: true, Retries: referenceRetries}
			if designs.Completion(d) && os.Getenv(uringCatalogueEnv) == "1" {
				opts.Stop = conformance.StopSIGTERM // X3–X5: SIGTERM with operations in flight on the rings
			}
			conformance.Run(t, conformance.Process{Design: d, Command: []string{exe}}, mustSelect(t, ids), opts)
		})
	}
}

// referenceRetries is how many more times a reference run tries a case
// that ended inconclusive (conformance.Options.Retries): a reference
// reactor must establish every precondition, but on a machine shared with
// other work whether one attempt does is a draw of timing (M3's fresh
// connection taking the old descriptor number on another loop, A1's
// client getting the CPU). Strict then fails only a case inconclusive
// three times running; a failure is never run again.
const referenceRetries = 2
