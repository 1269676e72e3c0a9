package uring

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the proactor design. Its zero value is the design; it holds no
// state (each loop's is in its loop policy and the shared loop's ring).
type Design struct{}

// Name is reactors.Uring.
func (Design) Name() reactors.DesignName { return reactors.Uring }

// Completion is true: uring serves its connections through an io_uring
// (designs.Completion).
func (Design) Completion() bool { return true }

// Check refuses the multi-loop fields (reactors.CheckOneLoop) and urgent
// data, which the completion path does not read.
func (Design) Check(cfg reactors.Config) error {
	if err := reactors.CheckOneLoop(reactors.Uring, cfg); err != nil {
		return err
	}
	if cfg.Urgent == reactors.UrgentOOB {
		return fmt.Errorf("%w: urgent = oob: %s takes no urgent data (its receives are completions, with no read of the urgent mark)", reactors.ErrConfig, reactors.Uring)
	}
	return nil
}
