package faults_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
)

// Every reactor fault the reactors accept has a type here, and each type
// switches on exactly its own hook, round-trips through its spec, and
// applies to at least one design.
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
		applies := 0
		for _, d := range reactors.Designs {
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
	for _, n := range reactors.FaultNames {
		n, _, _ = strings.Cut(n, "[")
		if !names[n] {
			t.Errorf("reactor fault %q has no type in package faults", n)
		}
	}
	if _, err := faults.ParseReactor("gremlins"); err == nil || !strings.Contains(err.Error(), "no-drain") {
		t.Errorf("ParseReactor(gremlins) = %v, want an error listing the accepted names", err)
	}
}
