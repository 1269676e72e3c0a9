package conformance

import (
	"fmt"
	"slices"
	"sync"
	"time"

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

// probe does round trips of one 64 B frame every 10 ms on p until stop is
// closed and returns every round-trip time; a round trip unanswered for
// limit ends it with an error.
func probe(p *peer, kind wire.Kind, token uint64, stop <-chan struct{}, limit time.Duration) ([]time.Duration, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var rtts []time.Duration
	for seq := uint64(0); ; seq++ {
		select {
		case <-stop:
			return rtts, nil
		case <-tick.C:
		}
		payload := make([]byte, 64)
		fill(payload, token, seq)
		sent := time.Now()
		if _, err := p.link.Write(wire.AppendFrame(nil, kind, 0, token, seq, monoNow(), payload)); err != nil {
			return rtts, err
		}
		g, err := p.next(limit)
		if err != nil {
			return rtts, fmt.Errorf("round trip %d: %w (waited %v)", seq, err, limit)
		}
		if g.h.Kind != kind || g.h.Token != token || g.h.Seq != seq {
			return rtts, fmt.Errorf("round trip %d: got %s", seq, g)
		}
		rtts = append(rtts, time.Since(sent))
	}
}

// boundFor derives the hot-load bound for the instance and records its
// derivation with the evidence.
func boundFor(c *C, light int) time.Duration {
	var b time.Duration
	var why string
	if ref := c.Reference(); ref != nil {
		b, why = hotBound(ref, light)
	} else {
		b, why = blackBoxBound(light)
	}
	c.Evidencef("bound: %s", why)
	return b
}

// overBound judges waits against bound the way every hot-load case does:
// one descheduling of a loaded VM must not fail a correct reactor, so up
// to max(1, 2%) of the waits may exceed the bound, none may exceed twice
// it. A starved source exceeds it on every wait. It returns "" or what
// was wrong.
func overBound(waits []time.Duration, bound time.Duration) string {
	over, worst := 0, time.Duration(0)
	for _, w := range waits {
		if w > bound {
			over++
		}
		worst = max(worst, w)
	}
	allowed := max(1, len(waits)/50)
	switch {
	case worst > 2*bound:
		return fmt.Sprintf("longest %v, over twice the bound %v", worst.Round(time.Millisecond), bound)
	case over > allowed:
		return fmt.Sprintf("%d of %d over the bound %v (at most %d allowed)", over, len(waits), bound, allowed)
	}
	return ""
}

// probeResult is one probing peer's round trips and how its probe ended.
type probeResult struct {
	rtts []time.Duration
	err  error
}

// probeAll runs probes (one per peer, round trips unanswered for limit
// end them) for 1.5 s, or until the case's time is up.
func probeAll(c *C, peers []*peer, kind wire.Kind, limit time.Duration) []probeResult {
	stop := make(chan struct{})
	results := make([]probeResult, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rtts, err := probe(p, kind, uint64(i+1), stop, limit)
			results[i] = probeResult{rtts, err}
		}()
	}
	timer := time.NewTimer(1500 * time.Millisecond)
	select {
	case <-timer.C:
	case <-c.Context().Done():
	}
	close(stop)
	wg.Wait()
	return results
}

// judgeProbes records every peer's round trips and fails the case where a
// probe ended in error, completed nothing, or broke the bound (overBound);
// harm says what the failure means ("starved under hot load").
func judgeProbes(c *C, peers []*peer, results []probeResult, bound time.Duration, harm string) {
	for i, r := range results {
		sorted := slices.Clone(r.rtts)
		slices.Sort(sorted)
		var p50, worst time.Duration
		if n := len(sorted); n > 0 {
			p50, worst = sorted[n/2], sorted[n-1]
		}
		c.Evidencef("%s: %d round trips, median %v, longest %v", peers[i].name, len(r.rtts), p50.Round(time.Microsecond), worst.Round(time.Microsecond))
		if r.err != nil {
			c.Errorf("%s: %v", peers[i].name, r.err)
		} else if len(r.rtts) == 0 {
			c.Errorf("%s: not one round trip completed in 1.5 s", peers[i].name)
		}
		if why := overBound(r.rtts, bound); why != "" {
			c.Errorf("%s %s: %s", peers[i].name, harm, why)
		}
	}
}

// underHotLoad runs probes (one per peer) for 1.5 s under the hot load and
// fails the case if any peer's round trips break the bound (overBound).
func underHotLoad(c *C, peers []*peer, kind wire.Kind, bound time.Duration) {
	h := startHot(c, c.Instance().Addr())
	// A round trip longer than twice the bound fails the case whatever
	// follows (overBound), so none is waited for much longer than that.
	results := probeAll(c, peers, kind, 2*bound+time.Second)
	echoed := h.echoed.Load()
	h.stop()
	if err := h.Err(); err != nil {
		c.Fatalf("hot load: %v", err)
	}
	c.Evidencef("hot connections: %d frames echoed in 1.5 s", echoed)
	judgeProbes(c, peers, results, bound, "starved under hot load")
	if c.Failed() {
		if f := c.Stop(); f.Stats != nil {
			if hs, ok := f.Stats.Histograms[reactors.HistRotation]; ok {
				c.Evidencef("rotation interval: p99 %v, max %v", time.Duration(hs.P99), time.Duration(hs.Max))
			}
		}
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
