// Package designs is the registry of the reference reactor designs: it maps
// a reactors.DesignName to the package that implements it, so that a
// caller holding a name (a flag, a matrix spec) can check a configuration
// against that design and build it. Adding a design is one package under
// reactors/ and one line in All.
package designs

import (
	"fmt"
	"strings"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/et"
	"github.com/reactorlab/reactorlab/reactors/lt"
	"github.com/reactorlab/reactorlab/reactors/mainsub"
	"github.com/reactorlab/reactorlab/reactors/oneshot"
	"github.com/reactorlab/reactorlab/reactors/prio"
	"github.com/reactorlab/reactorlab/reactors/priothread"
	"github.com/reactorlab/reactorlab/reactors/reuseport"
	"github.com/reactorlab/reactorlab/reactors/shared"
	"github.com/reactorlab/reactorlab/reactors/uring"
	"github.com/reactorlab/reactorlab/reactors/uringmainsub"
	"github.com/reactorlab/reactorlab/reactors/uringreuseport"
)

// All is every reference design, in the order help texts and tables list
// them. Names must be unique (a test checks).
var All = []reactors.Design{lt.Design{}, et.Design{}, oneshot.Design{}, prio.Design{}, priothread.Design{},
	mainsub.Design{}, reuseport.Design{}, shared.Design{}, uring.Design{}, uringreuseport.Design{}, uringmainsub.Design{}}

// Names is the name of every design in All, in its order.
func Names() []reactors.DesignName {
	names := make([]reactors.DesignName, len(All))
	for i, b := range All {
		names[i] = b.Name()
	}
	return names
}

// NameList is Names comma-separated, for help texts and errors.
func NameList() string {
	names := make([]string, len(All))
	for i, b := range All {
		names[i] = string(b.Name())
	}
	return strings.Join(names, ", ")
}

// Parse maps a name to its Design; the error lists the accepted names.
func Parse(s string) (reactors.DesignName, error) {
	for _, b := range All {
		if string(b.Name()) == s {
			return b.Name(), nil
		}
	}
	return "", fmt.Errorf("unknown reactor %q (accepted: %s)", s, NameList())
}

// Lookup returns the design named design; the error (wrapping
// reactors.ErrConfig) lists the accepted names.
func Lookup(design reactors.DesignName) (reactors.Design, error) {
	for _, b := range All {
		if b.Name() == design {
			return b, nil
		}
	}
	_, err := Parse(string(design))
	return nil, fmt.Errorf("%w: reactor: %w", reactors.ErrConfig, err)
}

// Completion reports whether design serves its connections through an
// io_uring (its layout's Completion, on Linux): the proactor designs, whose
// reads run ahead of the loop by up to the provided buffer ring. False for
// a name not registered.
func Completion(design reactors.DesignName) bool {
	b, err := Lookup(design)
	if err != nil {
		return false
	}
	c, ok := b.(interface{ Completion() bool })
	return ok && c.Completion()
}

// ValidateFor reports what New would refuse of design with cfg before it
// opens anything: an unknown design, any field Config.Validate refuses, and
// the combinations the design does not take (its Check). Every error wraps
// reactors.ErrConfig and names the field by its reactorlab serve flag name;
// New returns exactly these errors, so a caller that checks first
// (reactorlab run, before it starts a serve child) gives the same message
// the child would.
func ValidateFor(design reactors.DesignName, cfg reactors.Config) error {
	b, err := Lookup(design)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return b.Check(cfg)
}
