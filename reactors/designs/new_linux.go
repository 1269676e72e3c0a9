//go:build linux

package designs

import "github.com/reactorlab/reactorlab/reactors"

// New validates cfg for design (ValidateFor, whose errors it returns) and
// returns an unstarted reactor of that design: call Start to serve, and
// Stop or a STOP frame to end it.
func New(design reactors.Design, cfg reactors.Config) (*reactors.Reactor, error) {
	if err := ValidateFor(design, cfg); err != nil {
		return nil, err
	}
	return reactors.New(design, cfg)
}
