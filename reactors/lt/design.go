package lt

import "github.com/reactorlab/reactorlab/reactors"

// Design is the level-triggered design. Its zero value is the design; it
// holds no state (each loop's is in its loop policy).
type Design struct{}

// Name is reactors.LT.
func (Design) Name() reactors.DesignName { return reactors.LT }

// Check refuses the multi-loop fields (reactors.CheckOneLoop): lt runs one loop.
func (Design) Check(cfg reactors.Config) error { return reactors.CheckOneLoop(reactors.LT, cfg) }
