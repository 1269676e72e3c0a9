package conformance

import (
	"time"

	"github.com/reactorlab/reactorlab/reactors"
)

// t1Case is T1: an application timer fires late by at most the bound while
// hot connections saturate the reactor.
func t1Case() Case {
	return Case{
		ID:    "T1",
		Title: "timer deviation under load",
		Claim: "a 1 ms application timer on every loop fires late by at most the bound while two hot connections saturate the reactor",
		Bound: "timer lateness p99 ≤ the S1 bound and max ≤ twice it: due timers run once per round, and a round is bounded by the budgets",
		Needs: NeedReference | NeedStats,
		Setup: Setup{Tweak: func(d reactors.Design, cfg *reactors.Config) {
			hotTweak(d, cfg)
			cfg.AppTimer = time.Millisecond
		}},
		Run: runT1,
	}
}

func runT1(c *C) {
	bound := boundFor(c, 0)
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
	p := c.dial("probe conn", c.Instance().Addr())
	p.write(c, dataFrame(1, 0, 8))
	p.expectEcho(c, 1, 0, 8, 10*time.Second)
	// Lost final statistics are inconclusive if the reactor ended badly
	// at its stop (reported apart), a failure otherwise: never a skip.
	f := c.Stop()
	f.Stats = c.finalStats(f)
	late, ok := f.Stats.Histograms[reactors.HistTimerLate]
	if !ok || late.Count == 0 {
		c.Fatalf("the application timer never fired (histogram %q empty)", reactors.HistTimerLate)
	}
	c.Evidencef("timer lateness over %d firings: p50 %v, p99 %v, max %v; hot frames echoed %d", late.Count,
		time.Duration(late.P50), time.Duration(late.P99), time.Duration(late.Max), h.echoed.Load())
	if time.Duration(late.P99) > bound || time.Duration(late.Max) > 2*bound {
		c.Fatalf("timers fired late under hot load: p99 %v, max %v (bound: p99 ≤ %v, max ≤ %v)",
			time.Duration(late.P99).Round(time.Millisecond), time.Duration(late.Max).Round(time.Millisecond), bound, 2*bound)
	}
}
