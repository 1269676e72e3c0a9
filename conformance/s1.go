package conformance

import (
	"fmt"

	"github.com/reactorlab/reactorlab/wire"
)

// s1Case is S1: light connections are served within the bound while hot
// ones saturate the reactor.
func s1Case() Case {
	return Case{
		ID:    "S1",
		Title: "a hot source does not starve the others",
		Claim: "while two hot connections keep 2 MiB of costly frames queued, four light connections doing one round trip every 10 ms are each served within the bound",
		Bound: "light round trips ≤ max(500 ms, 20 × the wait the budgets allow: (consume budget + ready sources) turns, each ≤ min(input budget, first clock check past the time budget) frames × 400 µs); at most 2% over it, none over twice it",
		Setup: Setup{Tweak: hotTweak},
		Run:   runS1,
	}
}

func runS1(c *C) {
	const light = 4
	bound := boundFor(c, light)
	var peers []*peer
	for i := 0; i < light; i++ {
		peers = append(peers, c.dial(fmt.Sprintf("light conn %d", i+1), c.Instance().Addr()))
	}
	underHotLoad(c, peers, wire.KindData, bound)
}
