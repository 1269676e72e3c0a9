//go:build linux

package conformance_test

import (
	"slices"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// TestInProcessReference runs the whole catalogue on every one-loop
// design, and on the multi-loop designs all but the cases that measure
// one loop's own scheduling and fd reuse (oneLoopPaths): their loops run
// lt's policy, which lt is held to in full; what they add — their
// listeners, the handoff, several loops, STOP across them, stale results
// across them — is the rest of the catalogue and the M group. mainsub
// keeps S2: its control connections are on the acceptor, not a data loop.
func TestInProcessReference(t *testing.T) {
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			opts := conformance.Options{Strict: true}
			switch d {
			case reactors.ReusePort, reactors.SharedListener:
				opts.Cases = allBut(oneLoopPaths)
			case reactors.MainSub:
				opts.Cases = allBut(slices.DeleteFunc(slices.Clone(oneLoopPaths), func(id string) bool { return id == "S2" }))
			}
			conformance.Run(t, conformance.InProcess{Design: d}, opts)
		})
	}
}

// oneLoopPaths are the cases whose claim is about one loop's scheduling
// (S1, S2, T1, A1, W4, W5) or its own fd reuse (I1): about 16 s of the
// 24–27 s a design takes.
var oneLoopPaths = []string{"S1", "S2", "T1", "A1", "W4", "W5", "I1"}

// allBut is every case id of the catalogue but those in ids.
func allBut(ids []string) []string {
	var out []string
	for _, c := range conformance.Catalogue() {
		if !slices.Contains(ids, c.ID) {
			out = append(out, c.ID)
		}
	}
	return out
}
