// Package designs is the registry of the reference reactor designs: it maps
// a reactors.Design name to the package that implements it, so that a
// caller holding a name (a flag, a matrix spec) can check a configuration
// against that design and build it. Adding a design is one package under
// reactors/ and one line in the registry here.
package designs

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors"
)

// ValidateFor reports what New would refuse of design with cfg before it
// opens anything: an unknown design, any field Config.Validate refuses, and
// the combinations the design does not take. Every error wraps
// reactors.ErrConfig and names the field by its reactorlab serve flag name;
// New returns exactly these errors, so a caller that checks first
// (reactorlab run, before it starts a serve child) gives the same message
// the child would.
func ValidateFor(design reactors.Design, cfg reactors.Config) error {
	if _, err := reactors.ParseDesign(string(design)); err != nil {
		return fmt.Errorf("%w: reactor: %w", reactors.ErrConfig, err)
	}
	return cfg.ValidateFor(design)
}
