package et

import "github.com/reactorlab/reactorlab/reactors"

// Design is the edge-triggered design. Its zero value is the design.
type Design struct{}

// Name is reactors.ET.
func (Design) Name() reactors.Design { return reactors.ET }

// Check accepts every configuration Config.Validate accepts.
func (Design) Check(reactors.Config) error { return nil }
