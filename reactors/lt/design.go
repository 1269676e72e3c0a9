package lt

import "github.com/reactorlab/reactorlab/reactors"

// Design is the level-triggered design. Its zero value is the design; it
// holds no state (each loop's is in its loop policy).
type Design struct{}

// Name is reactors.LT.
func (Design) Name() reactors.Design { return reactors.LT }

// Check accepts every configuration Config.Validate accepts.
func (Design) Check(reactors.Config) error { return nil }
