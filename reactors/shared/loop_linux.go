//go:build linux

package shared

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
)

// New returns an unstarted shared-listener reference reactor configured
// by cfg (see reactors.DefaultConfig); call Start to serve and Stop or a
// STOP frame to end it. Errors name the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is cfg.DataLoops() loops, each with its own epoll fd, and the
// data listener in every one of them (EPOLLEXCLUSIVE unless exclusive is
// off); loop 0 also has the control listener.
func (Design) Layout(cfg *reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: cfg.DataLoops(), ControlLoop: 0, Listener: reactors.ListenerInEverySet, Exclusive: cfg.Exclusive != "off"}
}

// NewLoop gives every loop lt's flat policy.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return lt.NewFlat(l) }
