package cases

import (
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/wire"
)

// s2Case is S2: PINGs on the control address are answered within the bound
// while hot data saturates the reactor.
func s2Case() conformance.Case {
	return conformance.Case{
		ID:           "S2",
		Title:        "control latency under hot data",
		Claim:        fmt.Sprintf("PINGs on the control address every %v are answered within the bound while %d hot data connections saturate the reactor (a black box's control address is a byte echo: a PING comes back unchanged, as a reference reactor answers it)", probeEvery, hotConns),
		BlackBoxBugs: []string{"slow-control"},
		Bound:        "PING round trips within the S1 bound with the control source as the one light source, judged the same way (flat designs serve it as one more source per round; prio designs sooner); a black box, as in S1, is held to lt's with the default budgets",
		Needs:        conformance.NeedControl,
		Setup:        conformance.Setup{Tweak: hotTweak},
		Run:          runS2,
	}
}

func runS2(c *conformance.C) {
	bound, arithmetic := s1RoundTripLimit(c.Reference(), 1)
	c.Evidencef("bound: %s", arithmetic)
	p := dial(c, "control conn", c.Instance().ControlAddr())
	underHotLoad(c, []*peer{p}, wire.KindPing, bound)
}
