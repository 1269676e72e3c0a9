package faults

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/reactors"
)

// ReactorFault is a mutant of the reference reactors: a hook that turns a
// correct reactor into a known-buggy one. The conformance suite must fail
// every mutant, on every design it applies to, with the cases it names.
type ReactorFault interface {
	Fault
	// AppliesTo reports whether the suite must catch the fault on design
	// d (where it changes nothing observable, or only by chance, it does
	// not apply; the registry entry's Scope says why).
	AppliesTo(d reactors.DesignName) bool
	// CasesFor lists the cases that must fail on design d (nil when the
	// fault does not apply); Cases is their union over the designs.
	CasesFor(d reactors.DesignName) []string
	// Switch turns the fault on in f.
	Switch(f *reactors.Faults)
	// Spec is the form reactors.ParseFault and ParseReactor accept.
	Spec() string
}

// Mutant is the one type of every reactor fault: an entry of the
// reactors' mutant registry (reactors.Mutants), which holds its name, the
// hook it switches, the designs and cases it must be caught on and its
// doc, with the value of its parameter if it takes one. Get one from
// Reactors or ParseReactor; the zero value is no fault (no name, switches
// nothing, applies nowhere).
type Mutant struct {
	entry reactors.Mutant
	param int // the parameter (0: the entry's default); unused without one
}

// Name, Kind, Cases, AppliesTo, CasesFor, Switch and Spec implement
// ReactorFault from the registry entry.
func (m Mutant) Name() string    { return m.entry.Name }
func (m Mutant) Kind() Kind      { return Reactor }
func (m Mutant) Cases() []string { return slices.Clone(m.entry.Cases) }
func (m Mutant) AppliesTo(d reactors.DesignName) bool {
	return m.entry.Name != "" && m.entry.AppliesTo(d)
}
func (m Mutant) CasesFor(d reactors.DesignName) []string { return m.entry.CasesFor(d) }
func (m Mutant) Switch(f *reactors.Faults)               { m.entry.Switch(f, m.param) }
func (m Mutant) Spec() string                            { return m.entry.Spec(m.param) }

// Doc is the mutant's one-line description, Scope why it is not caught
// everywhere (empty when it is): both the registry entry's.
func (m Mutant) Doc() string   { return m.entry.Doc }
func (m Mutant) Scope() string { return m.entry.Scope }

// String returns the mutant's spec.
func (m Mutant) String() string { return m.Spec() }

// Reactors returns every reactor fault, one per registry entry, in the
// registry's order, each with its default parameter.
func Reactors() []ReactorFault {
	out := make([]ReactorFault, len(reactors.Mutants))
	for i, e := range reactors.Mutants {
		out[i] = Mutant{entry: e}
	}
	return out
}

// ParseReactor returns the reactor fault named by spec ("name", or
// "name:param=N" for one that takes a parameter, as reactors.ParseFault
// takes it); the error lists the accepted names.
func ParseReactor(spec string) (ReactorFault, error) {
	var probe reactors.Faults
	if err := reactors.ParseFault(spec, &probe); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	name, _, _ := strings.Cut(spec, ":")
	e, ok := reactors.LookupMutant(name)
	if !ok { // ParseFault accepts only registry names
		return nil, fmt.Errorf("%w: reactor fault %q is not in the registry", ErrSpec, name)
	}
	return Mutant{entry: e, param: e.Value(probe)}, nil
}
