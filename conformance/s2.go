package conformance

import (
	"github.com/reactorlab/reactorlab/wire"
)

// s2Case is S2: PINGs on the control address are answered within the bound
// while hot data saturates the reactor.
func s2Case() Case {
	return Case{
		ID:           "S2",
		Title:        "control latency under hot data",
		Claim:        "PINGs on the control address every 10 ms are answered within the bound while two hot data connections saturate the reactor (a black box's control address is a byte echo: a PING comes back unchanged, as a reference reactor answers it)",
		BlackBoxBugs: []string{"slow-control"},
		Bound: "PING round trips within the S1 bound, judged the same way (flat designs serve the control source as one more source per round; prio designs sooner); " +
			"a black box has no budgets to derive it from, so, as S1, it gets the bound of the reference reactor lt with the default budgets",
		Needs: NeedControl,
		Setup: Setup{Tweak: hotTweak},
		Run:   runS2,
	}
}

func runS2(c *C) {
	bound := boundFor(c, 1)
	p := c.dial("control conn", c.Instance().ControlAddr())
	underHotLoad(c, []*peer{p}, wire.KindPing, bound)
}
