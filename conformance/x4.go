package conformance

// x4Case is X4: after SIGTERM no connection outlives the stop grace (the
// opt-in stop contract).
func x4Case() Case {
	return Case{
		ID:           "X4",
		Title:        "after SIGTERM no connection outlives the grace period",
		Claim:        "after SIGTERM every connection ends (FIN or RST, or the process is gone) within the stop grace: " + termStimulus,
		BlackBoxBugs: []string{"keep-conns-on-term"},
		Bound:        "the stop grace (--stop-grace, default 5 s) + 1 s for the client to see the end on a loaded machine",
		Needs:        NeedStopContract,
		Run:          runX4,
	}
}

func runX4(c *C) {
	l := startTermLoad(c, false)
	l.awaitEnds()
	for _, s := range l.streams {
		if s.end == endOpen {
			c.Errorf("%s: still open %v after SIGTERM (the grace %v + %v), the server running", s.name, l.endBy.Sub(l.signalAt), c.stopGrace, termMargin)
		}
	}
}
