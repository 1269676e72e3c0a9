package faults_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// Every entry of the reactors' mutant registry is a reactor fault here,
// and each switches on exactly its own hook, round-trips through its spec,
// and applies to at least one design.
func TestReactorFaults(t *testing.T) {
	names := map[string]bool{}
	for _, f := range faults.Reactors() {
		names[f.Name()] = true
		if f.Kind() != faults.Reactor {
			t.Errorf("%s: kind %v", f.Name(), f.Kind())
		}
		var on reactors.Faults
		f.Switch(&on)
		if specs := on.Specs(); len(specs) != 1 || !strings.HasPrefix(specs[0], f.Name()) {
			t.Errorf("%s switches on %v", f.Name(), specs)
		}
		var parsed reactors.Faults
		if err := reactors.ParseFault(f.Spec(), &parsed); err != nil || !reflect.DeepEqual(parsed, on) {
			t.Errorf("%s: spec %q parses to %+v (%v), want %+v", f.Name(), f.Spec(), parsed, err, on)
		}
		g, err := faults.ParseReactor(f.Spec())
		if err != nil || g.Spec() != f.Spec() {
			t.Errorf("ParseReactor(%q) = %v, %v", f.Spec(), g, err)
		}
		if m, ok := f.(faults.Mutant); !ok || m.Doc() == "" {
			t.Errorf("%s: %T with no doc line", f.Name(), f)
		}
		applies := 0
		for _, d := range designs.Names() {
			if f.AppliesTo(d) {
				applies++
				if len(f.CasesFor(d)) == 0 {
					t.Errorf("%s applies to %s but names no case there", f.Name(), d)
				}
			} else if f.CasesFor(d) != nil {
				t.Errorf("%s does not apply to %s but names cases there", f.Name(), d)
			}
		}
		if applies == 0 || len(f.Cases()) == 0 {
			t.Errorf("%s applies to %d designs, names %v", f.Name(), applies, f.Cases())
		}
	}
	for _, m := range reactors.Mutants {
		if !names[m.Name] {
			t.Errorf("registry entry %q is not among faults.Reactors", m.Name)
		}
	}
	if len(names) != len(reactors.Mutants) {
		t.Errorf("faults.Reactors has %d faults, the registry %d entries", len(names), len(reactors.Mutants))
	}
	if g, err := faults.ParseReactor("missed-rearm:every=3"); err != nil || g.Spec() != "missed-rearm:every=3" {
		t.Errorf("ParseReactor(missed-rearm:every=3) = %v, %v: the parameter is lost", g, err)
	}
	if _, err := faults.ParseReactor("gremlins"); err == nil || !strings.Contains(err.Error(), "no-drain") {
		t.Errorf("ParseReactor(gremlins) = %v, want an error listing the accepted names", err)
	}
}

// The zero Mutant is no fault: it switches nothing and applies nowhere.
func TestZeroMutant(t *testing.T) {
	var m faults.Mutant
	var f reactors.Faults
	m.Switch(&f)
	if f.Any() || m.Name() != "" || len(m.Cases()) != 0 {
		t.Errorf("zero Mutant: switched %+v, name %q, cases %v", f, m.Name(), m.Cases())
	}
	for _, d := range designs.Names() {
		if m.AppliesTo(d) || m.CasesFor(d) != nil {
			t.Errorf("zero Mutant applies to %s (cases %v)", d, m.CasesFor(d))
		}
	}
}
