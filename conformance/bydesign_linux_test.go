//go:build linux

package conformance_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// An inconclusive case that names the server's design is marked so in
// its result, its summary, the table and the JUnit report; one that
// failed first stays a failure, never marked; a plain inconclusive is not
// marked.
func TestInconclusiveByDesign(t *testing.T) {
	target := conformance.InProcess{Design: reactors.DesignName("lt")}
	run := func(id string, body func(c *conformance.C)) conformance.Result {
		t.Helper()
		return conformance.RunCase(context.Background(), target, conformance.Case{ID: id, Title: id, Run: body}, 30*time.Second)
	}
	design := run("D1", func(c *conformance.C) { c.InconclusiveByDesignf("it never holds: seen twice") })
	plain := run("D2", func(c *conformance.C) { c.Inconclusivef("not seen") })
	failed := run("D3", func(c *conformance.C) {
		c.Errorf("claim broken")
		c.InconclusiveByDesignf("it never holds")
	})
	if design.Verdict != conformance.Inconclusive || !design.ByDesign || design.Reason != "it never holds: seen twice" {
		t.Errorf("by design: %+v", design)
	}
	if plain.Verdict != conformance.Inconclusive || plain.ByDesign {
		t.Errorf("plain inconclusive: %+v", plain)
	}
	if failed.Verdict != conformance.Fail || failed.ByDesign {
		t.Errorf("failed, then by design: %+v", failed)
	}
	results := []conformance.Result{design, plain, failed}
	if s := conformance.Summarize(results); s.Inconclusive != 2 || s.ByDesign != 1 || s.Fail != 1 {
		t.Errorf("summary: %+v", s)
	}
	if line, want := conformance.SummaryLine("t", conformance.Summarize(results)), "conformance: 0 passed, 0 skipped, 2 inconclusive (1 of them by the server's design), 1 failed on t"; line != want {
		t.Errorf("go test's summary line %q, want %q", line, want)
	}
	var tab bytes.Buffer
	if err := conformance.WriteTable(&tab, "t", results, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"D1 inconclusive (the server's design): D1: it never holds: seen twice",
		"D2 inconclusive: D2: not seen",
		"2 inconclusive (a precondition could not be established; in 1 of them the server's design never offers it",
	} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	var x bytes.Buffer
	if err := conformance.WriteJUnit(&x, "t", results); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(x.String(), `message="inconclusive (the server&#39;s design): it never holds: seen twice"`) || !strings.Contains(x.String(), `name="by_design" value="true"`) {
		t.Errorf("JUnit:\n%s", x.String())
	}
}
