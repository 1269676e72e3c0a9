package cases

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/wire"
)

// probe does round trips of one 64 B frame every probeEvery on p until stop is
// closed and returns every round-trip time; a round trip unanswered for
// limit ends it with an error.
func probe(p *peer, kind wire.Kind, token uint64, stop <-chan struct{}, limit time.Duration) ([]time.Duration, error) {
	tick := time.NewTicker(probeEvery)
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

// overBound judges waits against bound the way every hot-load case does:
// one descheduling of a loaded VM must not fail a correct reactor, so up
// to max(1, one in overBoundEvery) of the waits may exceed the bound, none
// may exceed twice it. A starved source exceeds it on every wait. It
// returns "" or what was wrong.
func overBound(waits []time.Duration, bound time.Duration) string {
	over, worst := 0, time.Duration(0)
	for _, w := range waits {
		if w > bound {
			over++
		}
		worst = max(worst, w)
	}
	allowed := max(1, len(waits)/overBoundEvery)
	switch {
	case worst > 2*bound:
		return fmt.Sprintf("longest %v, over twice the bound %v", worst.Round(time.Millisecond), bound)
	case over > allowed:
		return fmt.Sprintf("%d of %d over the bound %v (at most %d allowed)", over, len(waits), bound, allowed)
	}
	return ""
}

// overBoundEvery is one over the share of waits overBound lets exceed
// the bound; overBoundRule says the rule in a case's bound.
const overBoundEvery = 50

var overBoundRule = fmt.Sprintf("at most %d%% over it (or one), none over twice it", 100/overBoundEvery)

// probeFor is how long probeAll probes; a probe does a round trip every
// probeEvery.
const (
	probeFor   = 1500 * time.Millisecond
	probeEvery = 10 * time.Millisecond
)

// probeResult is one probing peer's round trips and how its probe ended.
type probeResult struct {
	rtts []time.Duration
	err  error
}

// probeAll runs probes (one per peer, round trips unanswered for limit
// end them) for probeFor, or until the case's time is up.
func probeAll(c *conformance.C, peers []*peer, kind wire.Kind, limit time.Duration) []probeResult {
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
	timer := time.NewTimer(probeFor)
	select {
	case <-timer.C:
	case <-c.Context().Done():
	}
	close(stop)
	wg.Wait()
	return results
}

// broke reports whether judgeProbes fails the case on r: its probe
// ended in error, completed nothing, or broke the bound (overBound).
func (r probeResult) broke(bound time.Duration) bool {
	return r.err != nil || len(r.rtts) == 0 || overBound(r.rtts, bound) != ""
}

// anyBroke reports whether judgeProbes fails the case on results.
func anyBroke(results []probeResult, bound time.Duration) bool {
	return slices.ContainsFunc(results, func(r probeResult) bool { return r.broke(bound) })
}

// judgeProbes records every peer's round trips and fails the case where a
// probe ended in error, completed nothing, or broke the bound (overBound);
// harm says what the failure means ("starved under hot load").
func judgeProbes(c *conformance.C, peers []*peer, results []probeResult, bound time.Duration, harm string) {
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
			c.Errorf("%s: not one round trip completed in %v", peers[i].name, probeFor)
		}
		if why := overBound(r.rtts, bound); why != "" {
			c.Errorf("%s %s: %s", peers[i].name, harm, why)
		}
	}
}

// lightProbes is what W4 and W5 start with: the bound on a light round
// trip (w4RoundTripLimit), the fill limit, and the four light connections, each
// said in the evidence or the log.
func lightProbes(c *conformance.C) (bound time.Duration, limit int64, peers []*peer) {
	const light = w4Light
	bound, why := w4RoundTripLimit(c.Reference(), light)
	c.Evidencef("bound: %s", why)
	limit, lwhy := fillLimit(c)
	c.Logf("%s", lwhy)
	for i := 0; i < light; i++ {
		peers = append(peers, dial(c, fmt.Sprintf("light conn %d", i+1), c.Instance().Addr()))
	}
	return bound, limit, peers
}
