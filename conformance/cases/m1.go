package cases

import (
	"fmt"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/reactors"
)

// m1Case is M1: every connection of a storm that outruns the queue through
// which one loop hands connections to another is accepted and answered.
func m1Case() conformance.Case {
	accept := reactors.DefaultBudgets().Accept
	return conformance.Case{
		ID:    "M1",
		Title: "accept storm beyond the handoff queue",
		Claim: fmt.Sprintf("every connection of a storm of %d opened at once, each sending one frame, is accepted and answered, also when the storm outruns the queue through which one loop hands connections to another. Inconclusive on a server that hands connections over (its counters show handoffs) unless a handoff was seen finding the queue full", m1Conns),
		Bound: fmt.Sprintf("every connection's echo within %v of the storm's start: an acceptor accepts up to %d a round and a sub-loop registers what its ingress holds every round, so even with %d sub-loops of %d items each the %d are handed over in about %d rounds (milliseconds each); but a correct server whose listen backlog is shorter than the storm (asyncio's 100) drops SYNs, which the client's kernel sends again after 1, 3 and 7 s: %v lets a connection through on its third retransmission",
			m1Bound, accept, m1SubLoops, m1IngressCap, m1Conns, budgetsFor(m1Conns, m1SubLoops*m1IngressCap), m1Bound),
		Setup: conformance.Setup{Tweak: m1Tweak},
		Run:   runM1,
	}
}

// m1IngressCap is the sub-loops' ingress in M1: a few items, so that a
// storm outruns it (2 is the smallest Config accepts).
const m1IngressCap = 4

// m1SubLoops is the sub-loops a design that hands connections over runs
// in M1; m1Conns is the connections of its storm.
const (
	m1SubLoops = 2
	m1Conns    = 512
)

// m1Tweak gives a design that hands connections over two sub-loops with
// tiny ingresses, so the storm finds them full.
func m1Tweak(d reactors.DesignName, cfg *reactors.Config) {
	if withLoops(d, cfg, m1SubLoops) && (d == reactors.MainSub || d == reactors.UringMainSub) {
		cfg.IngressCap = m1IngressCap
	}
}

// m1Bound is M1's bound on each connection of the storm (see its Bound).
const m1Bound = 10 * time.Second

func runM1(c *conformance.C) {
	const conns = m1Conns
	var ext0 map[string]uint64
	var extErr error
	bad := storm(c.Instance().Addr(), conns, m1Bound, func() { ext0, extErr = procfs.ReadTcpExt() })
	// A full accept queue drops SYNs, which clients send again after 1, 3
	// and 7 s: the kernel's count tells a backlog shorter than the storm
	// (or an acceptor too slow for it) from a server that loses
	// connections it accepted.
	overflow := ""
	if ext1, err := procfs.ReadTcpExt(); err == nil && extErr == nil {
		n, d := ext1["ListenOverflows"]-ext0["ListenOverflows"], ext1["ListenDrops"]-ext0["ListenDrops"]
		c.Evidencef("the kernel counted %d accept queue overflows and %d listen drops during the storm (TcpExt ListenOverflows, ListenDrops, this network namespace)", n, d)
		if n > 0 {
			overflow = fmt.Sprintf(" (the kernel counted %d accept queue overflows in this network namespace during the storm, most likely this listener's: SYNs dropped and sent again after 1, 3 and 7 s point to a listen backlog shorter than the storm, or an acceptor too slow for it)", n)
		}
	}
	st, ok := multiLoopStats(c)
	if ok {
		k := st.Counters
		c.Evidencef("handoffs %d, handoffs registered %d, pushes that found a full ingress %d, most held by the acceptor at once %d, refused %d",
			k.Handoffs, k.HandoffsIn, k.HandoffFull, k.HandoffBacklogMax, k.ConnsRefused)
	}
	if len(bad) > 0 {
		c.Evidencef("sent: %d connections dialled at once, one 64 B frame each", conns)
		c.Fatalf("%d of %d connections not served within %v: %s%s", len(bad), conns, m1Bound, strings.Join(firstFew(bad, 5), "; "), overflow)
	}
	if ok && st.Counters.Handoffs > 0 && st.Counters.HandoffFull == 0 {
		c.Inconclusivef("every connection was served, but no handoff found a sub-loop's ingress full: the storm did not outrun the sub-loops, so the full queue was not exercised")
	}
}
