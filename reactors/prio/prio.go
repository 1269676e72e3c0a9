//go:build linux

package prio

import "github.com/reactorlab/reactorlab/reactors"

// New returns an unstarted priority-bucket reference reactor configured by cfg (see
// reactors.DefaultConfig); call Start to serve and Stop or a STOP frame to
// end it. Errors name the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(reactors.Prio, cfg)
}
