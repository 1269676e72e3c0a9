package uringreuseport

import (
	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the multi-loop proactor design with a listener per loop. Its
// zero value is the design; it holds no state (each loop's is in its loop
// policy and its ring).
type Design struct{}

// Name is reactors.UringReusePort.
func (Design) Name() reactors.DesignName { return reactors.UringReusePort }

// Completion is true: every loop serves its connections through an
// io_uring of its own (designs.Completion).
func (Design) Completion() bool { return true }

// Check refuses an assignment and exclusive = off, as reuseport does, and
// urgent data, as uring does (reactors.CheckCompletionMultiLoop).
func (Design) Check(cfg reactors.Config) error {
	return reactors.CheckCompletionMultiLoop(reactors.UringReusePort, cfg, false)
}
