package shared

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the shared-listener design. Its zero value is the design.
type Design struct{}

// Name is reactors.SharedListener.
func (Design) Name() reactors.DesignName { return reactors.SharedListener }

// Check refuses an assignment: whichever loop accepts a connection keeps
// it.
func (Design) Check(cfg reactors.Config) error {
	if cfg.Assign != "" {
		return fmt.Errorf("%w: assign = %q: shared's connections belong to whichever loop accepts them (only %s assigns)", reactors.ErrConfig, cfg.Assign, reactors.MainSub)
	}
	return nil
}
