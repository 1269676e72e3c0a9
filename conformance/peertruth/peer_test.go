package peertruth

import (
	"slices"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
)

func truthLines(except string) string {
	var b strings.Builder
	for _, cs := range cases.Catalogue() {
		if cs.ID != except {
			b.WriteString(cs.ID + " pass  it echoes\n")
		}
	}
	return b.String()
}

func TestParse(t *testing.T) {
	p, err := parse(strings.NewReader("# a peer\nname: x\nrun: exec ./x\nneeds: cmd:cc file:/x.h\n"+truthLines("")), "x.peer")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "x" || p.Run != "exec ./x" || len(p.Needs) != 2 || !p.Truth["F1"].Allows(conformance.Pass) || p.Truth["F1"].Allows(conformance.Fail) || p.Truth["F1"].Why != "it echoes" {
		t.Errorf("parsed %+v", p)
	}
	either, err := parse(strings.NewReader("name: x\nrun: y\nW4 pass|inconclusive  timing\n"+truthLines("W4")), "x.peer")
	if err != nil || !either.Truth["W4"].Allows(conformance.Pass) || !either.Truth["W4"].Allows(conformance.Inconclusive) || either.Truth["W4"].Why != "timing" {
		t.Errorf("pass|inconclusive: %+v, %v", either.Truth["W4"], err)
	}
	buggy, err := parse(strings.NewReader("name: x\nrun: y\nI3 fail|inconclusive  timing\n"+truthLines("I3")), "x.peer")
	if err != nil || !buggy.Truth["I3"].Allows(conformance.Fail) || !buggy.Truth["I3"].Allows(conformance.Inconclusive) || buggy.Truth["I3"].Allows(conformance.Pass) {
		t.Errorf("fail|inconclusive: %+v, %v", buggy.Truth["I3"], err)
	}
	variant, err := parse(strings.NewReader("name: x\nrun: y\nruns: R3 M4\n"+truthLines("")), "x.peer")
	if err != nil || !slices.Equal(variant.Runs, []string{"R3", "M4"}) {
		t.Errorf("runs: %q, %v", variant.Runs, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"name: x\nrun: y\nruns: R3 Q7\n", "x.peer:3: runs: unknown case \"Q7\""},
		{"name: x\nrun: y\n" + truthLines("W4"), "no truth for case W4"},
		{"name: x\nrun: y\nZ9 pass no\n", "x.peer:3: unknown case \"Z9\""},
		{"name: x\nrun: y\nF1 maybe no\n", "verdict \"maybe\""},
		{"name: x\nnope: y\n", "x.peer:2: unknown key \"nope\""},
		{"name: x\nneeds: gcc\n", "need \"gcc\""},
		{truthLines(""), "name and run are required"},
		{"name: x\nrun: y\nF1 pass a\nF1 fail b\n", "F1 stated twice"},
		{"name: x\nrun: y\nF1 pass|fail a\n", "the pairs of verdicts a truth may give are pass|inconclusive and fail|inconclusive"},
	} {
		if _, err := parse(strings.NewReader(tc.text), "x.peer"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v, want an error with %q", tc.text, err, tc.want)
		}
	}
}
