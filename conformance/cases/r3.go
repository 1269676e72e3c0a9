package cases

import (
	"fmt"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// r3Case is R3: 256 connections opened at once are all accepted and
// served.
func r3Case() conformance.Case {
	accept := reactors.DefaultBudgets().Accept
	return conformance.Case{
		ID:    "R3",
		Title: "accept storm",
		Claim: fmt.Sprintf("%d connections opened at once are all accepted and served", r3Conns),
		Bound: fmt.Sprintf("every connection's first echo within %v (the accept budget is %d a round: %d rounds)", r3Bound, accept, budgetsFor(r3Conns, accept)),
		Run:   runR3,
	}
}

// r3Conns is the connections of R3's storm.
const r3Conns = 256

func runR3(c *conformance.C) {
	const conns = r3Conns
	bad := storm(c.Instance().Addr(), conns, r3Bound, nil)
	if len(bad) > 0 {
		shown := bad
		if len(shown) > 5 {
			shown = shown[:5]
		}
		c.Evidencef("sent: %d connections dialled at once, one 64 B frame each", conns)
		c.Fatalf("%d of %d connections not served within %v: %s", len(bad), conns, r3Bound, strings.Join(shown, "; "))
	}
}

// r3One is one connection of R3's storm, echoed within R3's bound (R4 checks
// its recovery with it).
func r3One(addr string, token uint64) error { return stormOne(addr, token, r3Bound) }

// r3Bound is R3's bound on each connection of its storm.
const r3Bound = 5 * time.Second
