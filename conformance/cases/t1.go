package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// t1Case is T1: an application timer fires late by at most the bound while
// hot connections saturate the reactor.
func t1Case() conformance.Case {
	return conformance.Case{
		ID:    "T1",
		Title: "timer deviation under load",
		Claim: fmt.Sprintf("a %v application timer on every loop fires late by at most the bound while %d hot connections saturate the reactor", t1Timer, hotConns),
		Bound: "timer lateness p99 ≤ the S1 bound (no light source) and max ≤ twice it: due timers run once per round, and a round is bounded by the budgets",
		Needs: conformance.NeedReference | conformance.NeedStats,
		Setup: conformance.Setup{Tweak: func(d reactors.DesignName, cfg *reactors.Config) {
			hotTweak(d, cfg)
			cfg.AppTimer = t1Timer
		}},
		Run: runT1,
	}
}

// t1Timer is the period of T1's application timer.
const t1Timer = time.Millisecond

// t1LatenessLimits are T1's limits on the application timer's lateness:
// its p99 within the S1 bound with no light source (a due timer waits at
// most for the round, like a source), its longest within twice that.
func t1LatenessLimits(ref *conformance.Reference) (p99, longest time.Duration, arithmetic string) {
	p99, s1 := s1RoundTripLimit(ref, 0)
	longest = 2 * p99
	return p99, longest, fmt.Sprintf("p99 ≤ the S1 bound (%s); max ≤ 2 × %v = %v", s1, p99, longest)
}

func runT1(c *conformance.C) {
	p99Limit, maxLimit, arithmetic := t1LatenessLimits(c.Reference())
	c.Evidencef("bound: %s", arithmetic)
	h := startHot(c, c.Instance().Addr())
	timer := time.NewTimer(1500 * time.Millisecond)
	select {
	case <-timer.C:
	case <-c.Context().Done():
	}
	h.stop()
	if err := h.Err(); err != nil {
		c.Fatalf("hot load: %v", err)
	}
	// A timer held up by a turn that outlived the load fires (and records
	// its lateness) in the round after the turn ends; one echo on a fresh
	// connection proves that round has run.
	p := dial(c, "probe conn", c.Instance().Addr())
	p.write(c, dataFrame(1, 0, 8))
	p.expectEcho(c, 1, 0, 8, 10*time.Second)
	// Lost final statistics are inconclusive if the reactor ended badly
	// at its stop (reported apart), a failure otherwise: never a skip.
	f := c.Stop()
	f.Stats = finalStats(c, f)
	late, ok := f.Stats.Histograms[reactors.HistTimerLate]
	if !ok || late.Count == 0 {
		c.Fatalf("the application timer never fired (histogram %q empty)", reactors.HistTimerLate)
	}
	c.Evidencef("timer lateness over %d firings: p50 %v, p99 %v, max %v; hot frames echoed %d", late.Count,
		time.Duration(late.P50), time.Duration(late.P99), time.Duration(late.Max), h.echoed.Load())
	if time.Duration(late.P99) > p99Limit || time.Duration(late.Max) > maxLimit {
		c.Fatalf("timers fired late under hot load: p99 %v, max %v (bound: p99 ≤ %v, max ≤ %v)",
			time.Duration(late.P99).Round(time.Millisecond), time.Duration(late.Max).Round(time.Millisecond), p99Limit, maxLimit)
	}
}
