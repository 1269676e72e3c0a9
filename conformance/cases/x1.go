package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// x1Case is X1: a STOP sent under hot load is observed by every loop, and
// answered with STOP_ACK, within the bound.
func x1Case() conformance.Case {
	return conformance.Case{
		ID:    "X1",
		Title: "STOP observed within bound under hot load",
		Claim: fmt.Sprintf("a STOP sent %v into a hot load is observed by every loop, and answered with STOP_ACK, within the bound", x1Lead),
		Bound: "STOP observation (every loop) and STOP_ACK ≤ twice the S1 bound: STOP is checked at the top of every round, the ACK follows one round later",
		Needs: conformance.NeedControl | conformance.NeedStats,
		Setup: conformance.Setup{Tweak: hotTweak},
		Run:   runX1,
	}
}

// x1StopLimit is X1's limit on every loop's observation of the STOP and
// on its STOP_ACK: twice the S1 bound with the control source as the
// light one (STOP is checked at the top of every round, the ACK follows
// one round later).
func x1StopLimit(ref *conformance.Reference) (limit time.Duration, arithmetic string) {
	s1, s1Arithmetic := s1RoundTripLimit(ref, 1)
	limit = 2 * s1
	return limit, fmt.Sprintf("2 × the S1 bound (%s) = %v", s1Arithmetic, limit)
}

// x1Lead is how far into the hot load X1 sends its STOP.
const x1Lead = time.Second

func runX1(c *conformance.C) {
	limit, arithmetic := x1StopLimit(c.Reference())
	c.Evidencef("bound: %s", arithmetic)
	ctl := dial(c, "control conn", c.Instance().ControlAddr())
	h := startHot(c, c.Instance().Addr())
	// STOP lands well inside the load: the first turn only finds the first
	// write's frames, later ones find the whole 2 MiB.
	lead := time.NewTimer(x1Lead)
	<-lead.C
	sent := sendStop(c, ctl)
	ledger, _ := awaitAck(c, ctl, limit+2*time.Second)
	ackAfter := time.Since(sent)
	h.stop()
	c.Evidencef("STOP_ACK %v after STOP; ledger %+v", ackAfter.Round(time.Microsecond), ledger)
	if !ledger.Balanced() {
		c.Errorf("STOP_ACK ledger does not balance: %+v", ledger)
	}
	// Lost final statistics are inconclusive if the reactor ended badly
	// at its stop (reported apart), a failure otherwise: never a skip.
	f := c.Stop()
	f.Stats = finalStats(c, f)
	obs := f.Stats.Histograms[reactors.HistStopObserve]
	c.Evidencef("STOP observation over %d loops: max %v", obs.Count, time.Duration(obs.Max))
	if int(obs.Count) < f.Stats.Loops {
		c.Errorf("%d of %d loops recorded observing STOP", obs.Count, f.Stats.Loops)
	}
	if time.Duration(obs.Max) > limit {
		c.Errorf("a loop observed STOP %v after it was sent (bound %v)", time.Duration(obs.Max).Round(time.Millisecond), limit)
	}
	if ackAfter > limit {
		c.Errorf("STOP_ACK came %v after STOP (bound %v)", ackAfter.Round(time.Millisecond), limit)
	}
}
