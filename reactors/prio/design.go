package prio

import "github.com/reactorlab/reactorlab/reactors"

// Design is the single-loop priority design. Its zero value is the design.
type Design struct{}

// Name is reactors.Prio.
func (Design) Name() reactors.DesignName { return reactors.Prio }

// Check refuses the multi-loop fields (reactors.CheckOneLoop): prio runs one loop.
func (Design) Check(cfg reactors.Config) error { return reactors.CheckOneLoop(reactors.Prio, cfg) }
