package reuseport

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the SO_REUSEPORT design. Its zero value is the design.
type Design struct{}

// Name is reactors.ReusePort.
func (Design) Name() reactors.DesignName { return reactors.ReusePort }

// Check refuses an assignment (the kernel's flow hash assigns) and
// exclusive = off (no listener is shared).
func (Design) Check(cfg reactors.Config) error {
	if cfg.Assign != "" {
		return fmt.Errorf("%w: assign = %q: reuseport's connections are assigned by the kernel's flow hash (only %s assigns)", reactors.ErrConfig, cfg.Assign, reactors.MainSub)
	}
	if cfg.Exclusive == "off" {
		return fmt.Errorf("%w: exclusive = off: reuseport's loops each have a listener of their own (only %s shares one)", reactors.ErrConfig, reactors.SharedListener)
	}
	return nil
}
