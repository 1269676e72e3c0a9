// Package designs is the registry of the reference reactor designs: it maps
// a reactors.Design name to the package that implements it, so that a
// caller holding a name (a flag, a matrix spec) can check a configuration
// against that design and build it. Adding a design is one package under
// reactors/ and one line in All.
package designs

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/et"
	"github.com/reactorlab/reactorlab/reactors/lt"
	"github.com/reactorlab/reactorlab/reactors/oneshot"
	"github.com/reactorlab/reactorlab/reactors/prio"
	"github.com/reactorlab/reactorlab/reactors/priothread"
)

// All is every reference design, in the order of reactors.Designs (a test
// keeps the two in step).
var All = []reactors.Blueprint{lt.Design{}, et.Design{}, oneshot.Design{}, prio.Design{}, priothread.Design{}}

// Lookup returns the design named design.
func Lookup(design reactors.Design) (reactors.Blueprint, error) {
	for _, b := range All {
		if b.Name() == design {
			return b, nil
		}
	}
	_, err := reactors.ParseDesign(string(design)) // the error lists the names
	if err == nil {
		err = fmt.Errorf("design %q is named but not registered", design)
	}
	return nil, fmt.Errorf("%w: reactor: %w", reactors.ErrConfig, err)
}

// ValidateFor reports what New would refuse of design with cfg before it
// opens anything: an unknown design, any field Config.Validate refuses, and
// the combinations the design does not take (its Check). Every error wraps
// reactors.ErrConfig and names the field by its reactorlab serve flag name;
// New returns exactly these errors, so a caller that checks first
// (reactorlab run, before it starts a serve child) gives the same message
// the child would.
func ValidateFor(design reactors.Design, cfg reactors.Config) error {
	b, err := Lookup(design)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return b.Check(cfg)
}
