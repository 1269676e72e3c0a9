package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// s1Case is S1: light connections are served within the bound while hot
// ones saturate the reactor.
func s1Case() conformance.Case {
	_, arithmetic := s1RoundTripLimit(nil, s1Light)
	return conformance.Case{
		ID:    "S1",
		Title: "a hot source does not starve the others",
		Claim: fmt.Sprintf("while %d hot connections keep 2 MiB of costly frames queued, %d light connections doing one round trip every %v are each served within the bound", hotConns, s1Light, probeEvery),
		Bound: fmt.Sprintf("light round trips within the bound the reactor's budgets allow, %s; %s", overBoundRule, arithmetic),
		Setup: conformance.Setup{Tweak: s1Tweak},
		Run:   runS1,
	}
}

// s1Tweak is hotTweak, with one data loop for a design that runs several:
// S1's bound counts the turns of the one loop that serves the hot and the
// light connections, on a CPU of its own. With several loops the hot
// connections spread over them, every loop busy, and on a machine with
// fewer free CPUs than loops each gets a share of one: a light round trip
// then waits on the kernel's scheduler sharing the CPU between loops, which
// the bound does not count and the design does not decide (one loop's
// scheduling is what S1 holds a design to; M2 and M4 hold how loops share
// connections and wakeups).
func s1Tweak(d reactors.DesignName, cfg *reactors.Config) {
	hotTweak(d, cfg)
	withLoops(d, cfg, 1)
}

// s1Light is the light connections S1 probes.
const s1Light = 4

// The bounds on a wait under load (S1's, and W4's) are loadedMargin times
// the wait the budgets allow, and at least loadedFloor: that absorbs a
// loaded, descheduled VM (clean reactors were measured at up to 480 ms
// with the machine's load average at 6). A turn's system calls (read,
// write, epoll_ctl) are given turnSyscalls, generously for this VM.
const (
	loadedMargin = 20
	loadedFloor  = 500 * time.Millisecond
	turnSyscalls = 200 * time.Microsecond
)

// s1RoundTripLimit is the longest a correct reactor may leave any source
// (or its own timers and STOP check) waiting under the hot load, with
// light sources besides the hot ones, from its budgets: a turn serves at
// most Input frames, and stops at the first clock check (every ClockEvery
// frames) past the time budget; a round serves at most Consume turns, and
// a source that becomes ready waits at most for the rest of the round and
// every source queued ahead of it; loadedMargin times that, at least
// loadedFloor. A turn without budgets takes about 4 s. A black box (ref
// nil) has no budgets: it is held to the reference reactor lt's with the
// default budgets.
func s1RoundTripLimit(ref *conformance.Reference, light int) (limit time.Duration, arithmetic string) {
	prefix := ""
	if ref == nil {
		cfg := reactors.DefaultConfig()
		hotTweak(reactors.LT, &cfg)
		ref, prefix = &conformance.Reference{Config: cfg}, "a black box, at lt's default budgets: "
	}
	b := ref.Config.Budgets
	frames := b.Input
	if b.Time > 0 {
		perCheck := hotCost * time.Duration(b.ClockEvery)
		byTime := int((b.Time+perCheck-1)/perCheck) * b.ClockEvery
		frames = min(frames, max(byTime, b.ClockEvery))
	}
	turn := time.Duration(frames)*hotCost + turnSyscalls
	turns := b.Consume + hotConns + light
	wait := time.Duration(turns) * turn
	limit = max(loadedFloor, loadedMargin*wait)
	return limit, fmt.Sprintf("%sturn ≤ %d frames × %v + %v = %v; wait ≤ (consume budget %d + %d hot + %d light) turns = %v; bound max(%v, %d × wait) = %v",
		prefix, frames, hotCost, turnSyscalls, turn, b.Consume, hotConns, light, wait, loadedFloor, loadedMargin, limit)
}

func runS1(c *conformance.C) {
	bound, arithmetic := s1RoundTripLimit(c.Reference(), s1Light)
	c.Evidencef("bound: %s", arithmetic)
	var peers []*peer
	for i := 0; i < s1Light; i++ {
		peers = append(peers, dial(c, fmt.Sprintf("light conn %d", i+1), c.Instance().Addr()))
	}
	underHotLoad(c, peers, wire.KindData, bound)
}
