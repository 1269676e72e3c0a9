package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// x4Case is X4: after SIGTERM no connection outlives the stop grace (the
// opt-in stop contract).
func x4Case() conformance.Case {
	_, arithmetic := x4EndLimit(conformance.DefaultStopGrace)
	return conformance.Case{
		ID:           "X4",
		Title:        "after SIGTERM no connection outlives the grace period",
		Claim:        "after SIGTERM every connection ends (FIN or RST, or the process is gone) within the stop grace: " + termStimulus,
		BlackBoxBugs: []string{"keep-conns-on-term"},
		Bound:        fmt.Sprintf("the stop grace (--stop-grace) + %v for the client to see the end on a loaded machine: by default %s", termMargin, arithmetic),
		Needs:        conformance.NeedStopContract,
		Run:          runX4,
	}
}

// x4EndLimit is how long after SIGTERM every connection must have ended
// (X4; X3 judges the streams that ended by then): the stop grace, and
// termMargin for the client to see the end on a loaded machine.
func x4EndLimit(grace time.Duration) (limit time.Duration, arithmetic string) {
	limit = grace + termMargin
	return limit, fmt.Sprintf("the grace %v + %v = %v", grace, termMargin, limit)
}

func runX4(c *conformance.C) {
	l := startTermLoad(c, false)
	l.awaitEnds()
	for _, s := range l.streams {
		if s.end == endOpen {
			c.Errorf("%s: still open %v after SIGTERM (%s), the server running", s.name, l.endBy.Sub(l.signalAt), l.endArithmetic)
		}
	}
}
