package cases

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// The multi-loop group (M): what a server with several loops must keep
// that one loop keeps by construction. Every case holds for any server; a
// reference reactor's counters add a precondition (M1, M3) or a second
// check (M2, M5), and a one-loop design passes them trivially where the
// claim is about loops it does not have.

// Catalogue returns every case, in id order within groups F R W I S T X A M P.
// Each case's constructor is in the file named for its id (f1.go: f1Case).
func Catalogue() []conformance.Case {
	cases := []conformance.Case{
		f1Case(), f2Case(), f3Case(), f4Case(),
		r1Case(), r2Case(), r3Case(), r4Case(),
		w1Case(), w2Case(), w3Case(), w4Case(), w5Case(),
		i1Case(), i2Case(), i3Case(),
		s1Case(), s2Case(), s3Case(),
		t1Case(),
		x1Case(), x2Case(), x3Case(), x4Case(), x5Case(),
		a1Case(),
		m1Case(), m2Case(), m3Case(), m4Case(), m5Case(),
		p1Case(), p2Case(), p3Case(), p4Case(),
	}
	for i := range cases {
		cases[i].Mutants = mutantsOf(cases[i].ID)
	}
	return cases
}

// mutantsOf names, in the registry's order, the mutants whose entry in
// reactors.Mutants names case id.
func mutantsOf(id string) []string {
	var names []string
	for _, m := range reactors.Mutants {
		if slices.Contains(m.Cases, id) {
			names = append(names, m.Name)
		}
	}
	return names
}

// Lookup returns the case with id.
func Lookup(id string) (conformance.Case, bool) {
	for _, c := range Catalogue() {
		if c.ID == id {
			return c, true
		}
	}
	return conformance.Case{}, false
}

// Select returns the catalogue entries named by ids (case ids or group
// letters; none: the whole catalogue), in catalogue order, or an error
// naming an unknown id.
func Select(ids []string) ([]conformance.Case, error) {
	all := Catalogue()
	if len(ids) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		id = strings.ToUpper(strings.TrimSpace(id))
		found := false
		for _, c := range all {
			if c.ID == id || c.Group() == id {
				found = true
			}
		}
		if !found {
			var known []string
			for _, c := range all {
				known = append(known, c.ID)
			}
			return nil, fmt.Errorf("unknown case %q (accepted: %s, or a group letter F R W I S T X A M P)", id, strings.Join(known, " "))
		}
		want[id] = true
	}
	var out []conformance.Case
	for _, c := range all {
		if want[c.ID] || want[c.Group()] {
			out = append(out, c)
		}
	}
	return out, nil
}
