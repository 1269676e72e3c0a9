package cases

import (
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
)

// r1Case is R1: a burst larger than one turn's budgets is all served, in
// order, without further readiness events.
func r1Case() conformance.Case {
	b := reactors.DefaultBudgets()
	return conformance.Case{
		ID:    "R1",
		Title: "burst larger than one turn's budget",
		Claim: fmt.Sprintf("%d frames of %d KiB written at once (%.1f MiB: %d input budgets, %d byte budgets) are all served, in order, without further readiness events",
			r1Frames, r1Size>>10, float64(r1Frames*r1Size)/(1<<20), budgetsFor(r1Frames, b.Input), budgetsFor(r1Frames*r1Size, b.Bytes)),
		WireFaults: []string{"coalesced"},
		Bound:      fmt.Sprintf("each echo within %v of the previous one (a turn is at most %d frames, %d KiB or %v; the rest must be resumed from the ready queue)", echoBound, b.Input, b.Bytes>>10, b.Time),
		Run:        runR1,
	}
}

// R1's burst (S3's too): r1Frames DATA frames of r1Size payload bytes.
const r1Frames, r1Size = 300, 8 << 10

func runR1(c *conformance.C) {
	const n, size = r1Frames, r1Size
	p := dial(c, "conn 1", c.Instance().Addr())
	frames := dataFrames(1, n, size)
	errc := playAsync(c, p, faults.Coalesce{Frames: n}.Apply(faults.Writes(frames...)))
	for i := range frames {
		g, err := p.next(echoBound)
		if err != nil {
			c.Evidencef("sent: %d DATA frames of %d B in one write; %d echoed, then %v", n, size, i, err)
			c.Fatalf("burst stalled after %d of %d echoes", i, n)
		}
		if why := checkEcho(g, 1, uint64(i), size); why != "" {
			c.Fatalf("echo %d: %s", i, why)
		}
	}
	if err := <-errc; err != nil {
		c.Fatalf("sending: %v", err)
	}
}
