package et

import "github.com/reactorlab/reactorlab/reactors"

// Design is the edge-triggered design. Its zero value is the design.
type Design struct{}

// Name is reactors.ET.
func (Design) Name() reactors.DesignName { return reactors.ET }

// Check refuses the multi-loop fields (reactors.CheckOneLoop): et runs one loop.
func (Design) Check(cfg reactors.Config) error { return reactors.CheckOneLoop(reactors.ET, cfg) }
