//go:build linux

package priothread

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
)

// New returns an unstarted reference reactor with a separate control loop,
// configured by cfg (see reactors.DefaultConfig; ControlListen must be
// set); call Start to serve and Stop or a STOP frame to end it. Errors name
// the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is two loops, each on its own epoll fd: data on loop 0, control
// on loop 1.
func (Design) Layout(*reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: 2, ControlLoop: 1}
}

// NewLoop gives each loop lt's flat policy.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return lt.NewFlat(l) }
