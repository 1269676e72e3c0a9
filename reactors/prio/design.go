package prio

import "github.com/reactorlab/reactorlab/reactors"

// Design is the single-loop priority design. Its zero value is the design.
type Design struct{}

// Name is reactors.Prio.
func (Design) Name() reactors.Design { return reactors.Prio }

// Check accepts every configuration Config.Validate accepts
// (Config.PrioDataBudget is checked there).
func (Design) Check(reactors.Config) error { return nil }
