//go:build linux

package uringreuseport

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
)

// New returns an unstarted multi-loop proactor reference reactor with a
// listener per loop, configured by cfg (see reactors.DefaultConfig); call
// Start to serve and Stop or a STOP frame to end it. Errors name the first
// bad configuration field, or say why io_uring is unavailable (the errno
// and a hint).
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is cfg.DataLoops() loops on the completion path, each with its
// own ring and SO_REUSEPORT listener; loop 0 also has the control
// listener.
func (Design) Layout(cfg *reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: cfg.DataLoops(), ControlLoop: 0, Listener: reactors.ListenerPerLoop, Completion: true}
}

// NewLoop gives every loop lt's flat policy: a connection whose receives
// completed in a batch is served once the batch is reaped.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return lt.NewFlat(l) }
