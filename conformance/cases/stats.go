package cases

import (
	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// multiLoopStats is a reference reactor's statistics once a case's
// traffic is done: live in-process, else the final ones (the instance is
// stopped for them); false for a black box.
func multiLoopStats(c *conformance.C) (reactors.Stats, bool) {
	if c.Reference() == nil {
		return reactors.Stats{}, false
	}
	if st, err := c.Instance().Stats(); err == nil {
		return st, true
	}
	if f := c.Stop(); f.Stats != nil {
		return *f.Stats, true
	}
	return reactors.Stats{}, false
}
