package conformance

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

func schedulingCases() []Case {
	return []Case{{
		ID:      "S1",
		Title:   "a hot source does not starve the others",
		Claim:   "while two hot connections keep 2 MiB of costly frames queued, four light connections doing one round trip every 10 ms are each served within the bound",
		Mutants: []string{"no-budget"},
		Bound:   "light round trips ≤ max(500 ms, 20 × the wait the budgets allow: (consume budget + ready sources) turns, each ≤ min(input budget, first clock check past the time budget) frames × 400 µs); at most 2% over it, none over twice it",
		Setup:   Setup{Tweak: hotTweak},
		Run:     runS1,
	}, {
		ID:           "S2",
		Title:        "control latency under hot data",
		Claim:        "PINGs on the control address every 10 ms are answered within the bound while two hot data connections saturate the reactor (a black box's control address is a byte echo: a PING comes back unchanged, as a reference reactor answers it)",
		Mutants:      []string{"no-budget"},
		BlackBoxBugs: []string{"slow-control"},
		Bound: "PING round trips within the S1 bound, judged the same way (flat designs serve the control source as one more source per round; prio designs sooner); " +
			"a black box has no budgets to derive it from, so, as S1, it gets the bound of the reference reactor lt with the default budgets",
		Needs: NeedControl,
		Setup: Setup{Tweak: hotTweak},
		Run:   runS2,
	}, {
		ID:      "S3",
		Title:   "cross-thread tasks never lost while the loop sleeps",
		Claim:   "with callbacks on worker threads and the ingress budget at 4, every result of a 300-frame burst comes back though the loop sleeps between eventfd wakeups (no periodic tick to paper over a lost one)",
		Mutants: []string{"lost-wakeup"},
		Bound:   "each echo within 2 s of the previous one",
		Needs:   NeedReference,
		Setup: Setup{Tweak: func(d reactors.Design, cfg *reactors.Config) {
			withPool(d, cfg, 2)
			cfg.Timer = reactors.TimerDeadline
			cfg.Budgets.Ingress = 4
		}},
		Run: runS3,
	}}
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

func runS2(c *C) {
	bound := boundFor(c, 1)
	p := c.dial("control conn", c.Instance().ControlAddr())
	underHotLoad(c, []*peer{p}, wire.KindPing, bound)
}

func runS3(c *C) {
	if c.Reference().Config.Workers == 0 {
		c.Skipf("%s runs callbacks on its own threads: no offload pool, no cross-thread results", c.Reference().Design)
	}
	runR1(c)
}
