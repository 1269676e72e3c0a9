package uringmainsub

import (
	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the multi-loop proactor design with an acceptor handing
// connections to sub-loops. Its zero value is the design; it holds no
// state.
type Design struct{}

// Name is reactors.UringMainSub.
func (Design) Name() reactors.DesignName { return reactors.UringMainSub }

// Completion is true: every loop serves its connections through an
// io_uring of its own (designs.Completion).
func (Design) Completion() bool { return true }

// Check refuses more than 255 sub-loops and exclusive = off, as mainsub
// does, and urgent data, as uring does
// (reactors.CheckCompletionMultiLoop).
func (Design) Check(cfg reactors.Config) error {
	return reactors.CheckCompletionMultiLoop(reactors.UringMainSub, cfg, true)
}
