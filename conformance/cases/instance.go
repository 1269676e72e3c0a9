package cases

import (
	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// usage samples the instance's consumption or fails the case: a missing
// measurement must never read as a pass.
func usage(c *conformance.C) conformance.Usage {
	u, err := c.Instance().Usage()
	if err != nil {
		c.Fatalf("measuring the server: %v", err)
	}
	return u
}

// finalStats returns the reference reactor's final statistics from f, the
// instance's end: a reactor that ended badly at its stop (f.AtStop, a
// finding reported apart) has none, and the case is then inconclusive
// rather than charged with it; one that simply reported none fails the
// case, since a missing measurement never reads as a pass.
func finalStats(c *conformance.C, f conformance.Final) *reactors.Stats {
	if f.Stats != nil {
		return f.Stats
	}
	if f.AtStop != "" {
		c.Inconclusivef("the reference reactor ended badly at its stop (%s), so its final statistics, which this case judges, are lost (the end at the stop is reported apart)", f.AtStop)
	}
	c.Fatalf("the reference reactor reported no final statistics")
	return nil
}
