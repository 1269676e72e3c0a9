package mainsub

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the main/sub design. Its zero value is the design.
type Design struct{}

// Name is reactors.MainSub.
func (Design) Name() reactors.DesignName { return reactors.MainSub }

// Check refuses more than 255 sub-loops (with the acceptor, a layout has
// at most 256 loops) and exclusive = off (it has no shared listener).
func (Design) Check(cfg reactors.Config) error {
	if cfg.Loops > 255 {
		return fmt.Errorf("%w: loops = %d: mainsub runs an acceptor beside its sub-loops (accepted: 0..255)", reactors.ErrConfig, cfg.Loops)
	}
	if cfg.Exclusive == "off" {
		return fmt.Errorf("%w: exclusive = off: mainsub's acceptor alone waits on the listener (only %s shares one)", reactors.ErrConfig, reactors.SharedListener)
	}
	return nil
}
