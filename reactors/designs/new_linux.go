//go:build linux

package designs

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// New validates cfg for design (ValidateFor, whose errors it returns) and
// returns an unstarted reactor of that design: call Start to serve, and
// Stop or a STOP frame to end it.
func New(design reactors.DesignName, cfg reactors.Config) (*reactors.Reactor, error) {
	b, err := Lookup(design)
	if err != nil {
		return nil, err
	}
	p, ok := b.(reactors.Policy)
	if !ok {
		return nil, fmt.Errorf("design %s has no loop policy on this platform", design)
	}
	return reactors.New(p, cfg)
}
