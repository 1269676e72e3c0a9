package reactors_test

import (
	"errors"
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// Args must reproduce a configuration through Flags and ParseFault: the
// process conformance target depends on it.
func TestArgsRoundTrip(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Listen = "{addr}"
	cfg.Budgets.ClockEvery = 4
	cfg.Callback = "fixed:200µs"
	cfg.Timer = reactors.TimerDeadline
	cfg.Wait = reactors.WaitBlock
	cfg.AppTimer = time.Millisecond
	cfg.Workers = 2
	for _, m := range reactors.Mutants {
		if err := reactors.ParseFault(m.Spec(3), &cfg.Faults); err != nil {
			t.Fatal(err)
		}
	}
	args := cfg.Args()
	got := reactors.DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	got.Flags(fs)
	var faults []string
	fs.Func("fault", "", func(s string) error { faults = append(faults, s); return nil })
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	for _, f := range faults {
		if err := reactors.ParseFault(f, &got.Faults); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Fatalf("Args %q\nround trip: %+v\nwant:       %+v", args, got, cfg)
	}
	if def := reactors.DefaultConfig().Args(); len(def) != 0 {
		t.Fatalf("DefaultConfig().Args() = %q, want none", def)
	}
}

// The mutant registry is complete and consistent: every Faults field is
// the hook of exactly one entry, the entry's spec switches on that field
// and nothing else (and Specs gives the spec back), FaultNames lists the
// entries in order, and what an entry says about designs and cases holds
// together.
func TestMutantRegistry(t *testing.T) {
	hooks := map[string]string{}
	for i, m := range reactors.Mutants {
		if reactors.FaultNames[i] != m.Usage() {
			t.Errorf("FaultNames[%d] = %q, registry entry %q", i, reactors.FaultNames[i], m.Usage())
		}
		if other, dup := hooks[m.Hook]; dup {
			t.Errorf("%s and %s both switch %s", other, m.Name, m.Hook)
		}
		hooks[m.Hook] = m.Name
		checkMutantHook(t, m)
		checkMutantScope(t, m)
	}
	if len(reactors.FaultNames) != len(reactors.Mutants) {
		t.Errorf("FaultNames has %d names, the registry %d entries", len(reactors.FaultNames), len(reactors.Mutants))
	}
	for _, field := range reflect.VisibleFields(reflect.TypeFor[reactors.Faults]()) {
		if hooks[field.Name] == "" {
			t.Errorf("Faults.%s is the hook of no registry entry", field.Name)
		}
	}
}

// checkMutantHook: m's spec switches on m.Hook alone, Value reads it back,
// and Specs gives the spec back.
func checkMutantHook(t *testing.T, m reactors.Mutant) {
	t.Helper()
	var f reactors.Faults
	if err := reactors.ParseFault(m.Spec(3), &f); err != nil {
		t.Errorf("%s: %v", m.Name, err)
		return
	}
	v := reflect.ValueOf(f)
	for _, field := range reflect.VisibleFields(v.Type()) {
		if on := !v.FieldByIndex(field.Index).IsZero(); on != (field.Name == m.Hook) {
			t.Errorf("%s: spec %q leaves Faults.%s on=%v", m.Name, m.Spec(3), field.Name, on)
		}
	}
	want := 1
	if m.Param != "" {
		want = 3
	}
	if got := m.Value(f); got != want {
		t.Errorf("%s: Value after %q = %d, want %d", m.Name, m.Spec(3), got, want)
	}
	if specs := f.Specs(); !slices.Equal(specs, []string{m.Spec(3)}) {
		t.Errorf("%s: Specs = %q, want [%q]", m.Name, specs, m.Spec(3))
	}
	if m.Param != "" && m.Default < 1 {
		t.Errorf("%s: parameter %s defaults to %d, want >= 1", m.Name, m.Param, m.Default)
	}
}

// checkMutantScope: m has a doc line and cases, names only designs that
// exist, holds only cases it names, and says why whenever it is not caught
// everywhere with every case.
func checkMutantScope(t *testing.T, m reactors.Mutant) {
	t.Helper()
	if m.Doc == "" || len(m.Cases) == 0 {
		t.Errorf("%s: doc %q, cases %v: both are required", m.Name, m.Doc, m.Cases)
	}
	for _, d := range m.Designs {
		if !slices.Contains(designs.Names(), d) {
			t.Errorf("%s: design %q is not a design", m.Name, d)
		}
	}
	for d, held := range m.Holds {
		for _, c := range held {
			if !slices.Contains(m.Cases, c) {
				t.Errorf("%s: holds %s on %s, a case it does not name", m.Name, c, d)
			}
		}
	}
	if narrowed := m.Designs != nil || len(m.Holds) > 0; narrowed != (m.Scope != "") {
		t.Errorf("%s: caught on %v (holds %v) with scope %q: a scope says why, and only then", m.Name, m.Designs, m.Holds, m.Scope)
	}
}

// ParseFault's errors name the bad input and, for an unknown name, list the
// accepted ones; the CLI and matrix specs show them as they are.
func TestParseFaultErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"gremlins", `unknown fault "gremlins" (accepted: ` + strings.Join(reactors.FaultNames, ", ") + ")"},
		{"no-drain:x=1", `fault "no-drain" takes no parameters`},
		{"gremlins:x=1", `fault "gremlins" takes no parameters`},
		{"missed-rearm:every=0", `fault missed-rearm: parameter "every=0" (accepted: every=N with N >= 1)`},
		{"missed-rearm:each=2", `fault missed-rearm: parameter "each=2" (accepted: every=N with N >= 1)`},
	} {
		var f reactors.Faults
		err := reactors.ParseFault(tc.spec, &f)
		if !errors.Is(err, reactors.ErrConfig) || err.Error() != reactors.ErrConfig.Error()+": "+tc.want {
			t.Errorf("ParseFault(%q) = %v, want %q", tc.spec, err, tc.want)
		}
	}
	var f reactors.Faults
	if err := reactors.ParseFault("missed-rearm", &f); err != nil || f.MissedRearmEvery != 7 {
		t.Errorf("ParseFault(missed-rearm) = %v, every %d: want the default, 7", err, f.MissedRearmEvery)
	}
}
