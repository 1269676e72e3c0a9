package oneshot

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the EPOLLONESHOT design. Its zero value is the design.
type Design struct{}

// Name is reactors.OneShot.
func (Design) Name() reactors.DesignName { return reactors.OneShot }

// Check refuses an offload pool: the design's workers are the pool.
func (Design) Check(cfg reactors.Config) error {
	if err := reactors.CheckOneLoop(reactors.OneShot, cfg); err != nil {
		return err
	}
	if cfg.Workers > 0 {
		return fmt.Errorf("%w: workers = %d: oneshot runs callbacks on its own worker threads (set threads instead, and workers = 0)", reactors.ErrConfig, cfg.Workers)
	}
	return nil
}
