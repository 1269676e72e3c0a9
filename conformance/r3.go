package conformance

import (
	"strings"
	"time"
)

// r3Case is R3: 256 connections opened at once are all accepted and
// served.
func r3Case() Case {
	return Case{
		ID:    "R3",
		Title: "accept storm",
		Claim: "256 connections opened at once are all accepted and served",
		Bound: "every connection's first echo within 5 s (the accept budget is 64 per round: 4 rounds)",
		Run:   runR3,
	}
}

func runR3(c *C) {
	const conns = 256
	bad := storm(c.Instance().Addr(), conns, r3Bound, nil)
	if len(bad) > 0 {
		shown := bad
		if len(shown) > 5 {
			shown = shown[:5]
		}
		c.Evidencef("sent: %d connections dialled at once, one 64 B frame each", conns)
		c.Fatalf("%d of %d connections not served within 5 s: %s", len(bad), conns, strings.Join(shown, "; "))
	}
}

// r3One is one connection of R3's storm, echoed within R3's bound (R4 checks
// its recovery with it).
func r3One(addr string, token uint64) error { return stormOne(addr, token, r3Bound) }

// r3Bound is R3's bound on each connection of its storm.
const r3Bound = 5 * time.Second
