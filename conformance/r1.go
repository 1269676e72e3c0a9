package conformance

import (
	"github.com/reactorlab/reactorlab/faults"
)

// r1Case is R1: a burst larger than one turn's budgets is all served, in
// order, without further readiness events.
func r1Case() Case {
	return Case{
		ID:         "R1",
		Title:      "burst larger than one turn's budget",
		Claim:      "300 frames of 8 KiB written at once (2.4 MiB: 10 input budgets, 38 byte budgets) are all served, in order, without further readiness events",
		WireFaults: []string{"coalesced"},
		Bound:      "each echo within 2 s of the previous one (a turn is at most 32 frames, 64 KiB or 1 ms; the rest must be resumed from the ready queue)",
		Run:        runR1,
	}
}

func runR1(c *C) {
	const n, size = 300, 8 << 10
	p := c.dial("conn 1", c.Instance().Addr())
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
