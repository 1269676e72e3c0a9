//go:build linux

package uring

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
)

// New returns an unstarted proactor reference reactor configured by cfg
// (see reactors.DefaultConfig); call Start to serve and Stop or a STOP
// frame to end it. Errors name the first bad configuration field, or say
// why io_uring is unavailable (the errno and a hint).
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is one loop on the completion path.
func (Design) Layout(*reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: 1, Completion: true}
}

// NewLoop returns lt's flat policy for l: a connection whose receives
// completed in a batch is served once the batch is reaped, in completion
// order.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return lt.NewFlat(l) }
