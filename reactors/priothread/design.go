package priothread

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// Design is the design with a separate control loop. Its zero value is the
// design.
type Design struct{}

// Name is reactors.PrioThread.
func (Design) Name() reactors.DesignName { return reactors.PrioThread }

// Check refuses a configuration without a control address: the control
// loop would have nothing to serve.
func (Design) Check(cfg reactors.Config) error {
	if err := reactors.CheckOneLoop(reactors.PrioThread, cfg); err != nil {
		return err
	}
	if cfg.ControlListen == "" {
		return fmt.Errorf("%w: control-listen is empty: prio-thread serves control on its own thread and needs a control address", reactors.ErrConfig)
	}
	return nil
}
