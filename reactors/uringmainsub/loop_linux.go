//go:build linux

package uringmainsub

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
)

// New returns an unstarted multi-loop proactor reference reactor with an
// acceptor and sub-loops, configured by cfg (see reactors.DefaultConfig);
// call Start to serve and Stop or a STOP frame to end it. Errors name the
// first bad configuration field, or say why io_uring is unavailable (the
// errno and a hint).
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is the acceptor (loop 0, which also serves control) and
// cfg.DataLoops() sub-loops, every loop on the completion path with a ring
// of its own.
func (Design) Layout(cfg *reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: cfg.DataLoops() + 1, ControlLoop: 0, Listener: reactors.ListenerHandoff, Completion: true}
}

// NewLoop gives every loop lt's flat policy.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return lt.NewFlat(l) }
