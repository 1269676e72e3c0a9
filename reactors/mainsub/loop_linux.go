//go:build linux

package mainsub

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
)

// New returns an unstarted main/sub reference reactor configured by cfg
// (see reactors.DefaultConfig); call Start to serve and Stop or a STOP
// frame to end it. Errors name the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is the acceptor (loop 0, which also serves control) and
// cfg.DataLoops() sub-loops, each on its own epoll fd.
func (Design) Layout(cfg *reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: cfg.DataLoops() + 1, ControlLoop: 0, Listener: reactors.ListenerHandoff}
}

// NewLoop gives every loop lt's flat policy.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return lt.NewFlat(l) }
