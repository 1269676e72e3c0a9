//go:build linux

package reuseport

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
)

// New returns an unstarted SO_REUSEPORT reference reactor configured by
// cfg (see reactors.DefaultConfig); call Start to serve and Stop or a STOP
// frame to end it. Errors name the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is cfg.DataLoops() loops, each with its own epoll fd and
// listener; loop 0 also has the control listener.
func (Design) Layout(cfg *reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: cfg.DataLoops(), ControlLoop: 0, Listener: reactors.ListenerPerLoop}
}

// NewLoop gives every loop lt's flat policy.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return lt.NewFlat(l) }
