//go:build linux

package conformance_test

import (
	"slices"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// TestInProcessReference runs the whole catalogue on every design, except
// on reuseport and shared the cases that measure one loop's own
// scheduling and identity paths (oneLoopPaths): their loops run lt's
// policy, which lt and mainsub (lt's policy on each sub-loop) are held to
// in full; what reuseport and shared add — their listeners, several loops
// — is the rest of the catalogue and the M group.
func TestInProcessReference(t *testing.T) {
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			opts := conformance.Options{Strict: true}
			if d == reactors.ReusePort || d == reactors.SharedListener {
				opts.Cases = allBut(oneLoopPaths)
			}
			conformance.Run(t, conformance.InProcess{Design: d}, opts)
		})
	}
}

// oneLoopPaths are the cases whose claim is about one loop's scheduling
// (S1, S2, T1, A1, W4) or its own fd reuse (I1): about 14 s of the 21–22
// s a design takes.
var oneLoopPaths = []string{"S1", "S2", "T1", "A1", "W4", "I1"}

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
