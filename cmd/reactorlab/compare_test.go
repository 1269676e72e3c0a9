//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/results"
)

// fakeCell is a cell of a fabricated run directory: "baseline" or
// "factor=value", its configuration, and a throughput factor applied to
// its runs.
type fakeCell struct {
	id     string
	config map[string]string
	scale  float64
}

// fabricateRun writes a run directory's manifest as the matrix lays it out
// (a baseline run then the cell's run, per repeat and factor cell), every
// run valid, with a throughput around 100,000 frames/s times the cell's
// scale; no lab runs and no interval logs (compare reads manifests only).
// The values depend on the repeat only, so two directories fabricated
// alike compare equal.
func fabricateRun(t *testing.T, dir, spec string, repeats int, cells ...fakeCell) {
	t.Helper()
	m := &results.Manifest{
		Format: results.ManifestFormat,
		Tool:   results.Tool{Version: "(devel)", Commit: "feedfacecafebeef", Go: "go1.26"},
		Spec:   results.SpecInfo{Name: spec, Text: "name: " + spec, Repeats: repeats},
		Shards: []results.ShardInfo{{Index: 1, Count: 1}},
	}
	for _, c := range cells {
		ci := results.CellInfo{ID: c.id, Config: c.config}
		if f, v, ok := strings.Cut(c.id, "="); ok {
			ci.Factor, ci.Value = f, v
		}
		m.Cells = append(m.Cells, ci)
	}
	add := func(c fakeCell, repeat int, pair string) {
		seq := len(m.Runs) + 1
		m.Runs = append(m.Runs, results.RunRecord{Shard: 1, Seq: seq, Cell: c.id, Repeat: repeat, Pair: pair,
			Dir: fmt.Sprintf("runs/%04d", seq), Valid: true,
			Metrics: map[string]float64{results.MetricThroughput: c.scale * (100_000 + 500*float64(repeat%5))}})
	}
	for r := 1; r <= repeats; r++ {
		for _, c := range cells[1:] {
			add(cells[0], r, c.id)
			add(c, r, c.id)
		}
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// cfg is a configuration: "reactor=lt", "hot=1", ….
func cfg(kv ...string) map[string]string {
	out := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		out[k] = v
	}
	return out
}

func runCompare(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"compare"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestCompareRefusesUnrelatedRuns: two runs of different specs that share
// no cell (same ID and configuration) are refused, exit 2, with one
// message on stderr naming both specs, their cells and what did not
// match; nothing on stdout, and no "no significant regression".
func TestCompareRefusesUnrelatedRuns(t *testing.T) {
	tmp := t.TempDir()
	old, next := filepath.Join(tmp, "alpha-run"), filepath.Join(tmp, "beta-run")
	fabricateRun(t, old, "alpha", 6, fakeCell{"baseline", cfg("reactor=lt", "hot=1"), 1}, fakeCell{"hot=16", cfg("reactor=lt", "hot=16"), 1})
	fabricateRun(t, next, "beta", 6, fakeCell{"baseline", cfg("reactor=et", "hot=1"), 1}, fakeCell{"inflight=64", cfg("reactor=et", "hot=1", "inflight=64"), 1})

	code, stdout, stderr := runCompare(old, next)
	if code != exitUsage || stdout != "" {
		t.Errorf("exit %d (want %d), stdout %q", code, exitUsage, stdout)
	}
	if !strings.HasPrefix(stderr, "reactorlab compare: nothing compared: ") || strings.Count(stderr, "reactorlab compare:") != 1 {
		t.Errorf("stderr is not one message:\n%s", stderr)
	}
	for _, want := range []string{
		`OLD ` + old + `: spec "alpha"`, `NEW ` + next + `: spec "beta"`, "cells baseline, hot=16", "cells baseline, inflight=64",
		"hot=16: only in the old runs", "inflight=64: only in the new runs", `baseline: configuration differs: reactor "lt" → "et"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stdout+stderr, "no significant regression") {
		t.Errorf("says no significant regression:\n%s", stderr)
	}

	// --require-all does not turn the refusal into a verdict; --json -
	// still gives the comparison, alone on stdout.
	if code, _, _ := runCompare(old, next, "--require-all"); code != exitUsage {
		t.Errorf("--require-all: exit %d, want %d", code, exitUsage)
	}
	code, stdout, stderr = runCompare(old, next, "--json", "-")
	var doc struct {
		Outcome  string `json:"outcome"`
		Compared int    `json:"compared_cells"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != exitUsage || doc.Outcome != "nothing_compared" || doc.Compared != 0 {
		t.Errorf("--json -: exit %d, %v, %+v; stdout:\n%s", code, err, doc, stdout)
	}
	if !strings.HasPrefix(stderr, "reactorlab compare: nothing compared: ") {
		t.Errorf("--json -: stderr %q", stderr)
	}

	// Suites with no spec in common: refused, naming the specs.
	fabricateRun(t, filepath.Join(tmp, "s1", "alpha"), "alpha", 6, fakeCell{"baseline", cfg("reactor=lt"), 1})
	fabricateRun(t, filepath.Join(tmp, "s2", "beta"), "beta", 6, fakeCell{"baseline", cfg("reactor=lt"), 1})
	code, stdout, stderr = runCompare(filepath.Join(tmp, "s1"), filepath.Join(tmp, "s2"))
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "no spec in common") ||
		!strings.Contains(stderr, "spec alpha: only in OLD") || !strings.Contains(stderr, "spec beta: only in NEW") {
		t.Errorf("suites: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

// partialRuns fabricates two runs that overlap in part: the baseline is
// compared, hot=16 is in OLD only, inflight=64 in NEW only, reactor=et in
// both with another configuration. The new runs' throughput is
// newScale × the old's.
func partialRuns(t *testing.T, newScale float64) (old, next string) {
	tmp := t.TempDir()
	old, next = filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
	base := cfg("reactor=lt", "hot=1", "callback=0")
	fabricateRun(t, old, "gate", 8,
		fakeCell{"baseline", base, 1},
		fakeCell{"hot=16", cfg("reactor=lt", "hot=16", "callback=0"), 1},
		fakeCell{"reactor=et", cfg("reactor=et", "hot=1", "callback=0"), 1})
	fabricateRun(t, next, "gate", 8,
		fakeCell{"baseline", base, newScale},
		fakeCell{"reactor=et", cfg("reactor=et", "hot=1", "callback=50us"), newScale},
		fakeCell{"inflight=64", cfg("reactor=lt", "hot=1", "callback=0", "inflight=64"), newScale})
	return old, next
}

// TestComparePartialOverlap: what could not be compared is listed; the
// exit is 0 without a regression, 1 with one, and 1 with --require-all,
// which says why on stderr.
func TestComparePartialOverlap(t *testing.T) {
	old, next := partialRuns(t, 1)
	code, stdout, stderr := runCompare(old, next)
	if code != 0 || stderr != "" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"not compared:\n", "  hot=16: only in the old runs\n", "  inflight=64: only in the new runs\n",
		`  reactor=et: configuration differs: callback "0" → "50us"` + "\n",
		"\nno significant regression beyond ±10%; not compared: 3 cells\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table does not hold %q:\n%s", want, stdout)
		}
	}

	code, stdout2, stderr := runCompare(old, next, "--require-all")
	if code != 1 || stdout2 != stdout {
		t.Errorf("--require-all: exit %d (want 1), table differs: %v", code, stdout2 != stdout)
	}
	if want := "reactorlab compare: --require-all: not everything was compared (3 cells; listed under \"not compared\")\n"; stderr != want {
		t.Errorf("--require-all: stderr %q, want %q", stderr, want)
	}

	// A regression in what was compared fails the gate without
	// --require-all.
	old, next = partialRuns(t, 0.7)
	code, stdout, _ = runCompare(old, next)
	if code != 1 || !strings.Contains(stdout, "REGRESSION") || !strings.Contains(stdout, "\n1 regression beyond ±10%; not compared: 3 cells\n") {
		t.Errorf("regression: exit %d\n%s", code, stdout)
	}

	// Everything compared: --require-all passes.
	code, _, stderr = runCompare(old, old, "--require-all")
	if code != 0 || stderr != "" {
		t.Errorf("a run against itself with --require-all: exit %d, stderr %q", code, stderr)
	}
}

// TestCompareSuitePartialOverlap: a spec one suite lacks is listed, not
// refused; --require-all fails on it.
func TestCompareSuitePartialOverlap(t *testing.T) {
	tmp := t.TempDir()
	for _, dir := range []string{"old/a", "old/b", "new/a", "new/b", "new/c"} {
		fabricateRun(t, filepath.Join(tmp, dir), filepath.Base(dir), 6, fakeCell{"baseline", cfg("reactor=lt"), 1}, fakeCell{"hot=2", cfg("reactor=lt", "hot=2"), 1})
	}
	old, next := filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
	code, stdout, stderr := runCompare(old, next)
	if code != 0 || stderr != "" || !strings.Contains(stdout, "## a\n") || !strings.Contains(stdout, "## b\n") ||
		!strings.Contains(stdout, "specs not compared:\n  c: only in the new runs") ||
		!strings.HasSuffix(stdout, "all specs: no significant regression beyond ±10%; not compared: 1 spec\n") {
		t.Errorf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if code, _, stderr := runCompare(old, next, "--require-all"); code != 1 || !strings.Contains(stderr, "(1 spec;") {
		t.Errorf("--require-all: exit %d, stderr %q", code, stderr)
	}
}

// TestCompareJSON: --json - puts the comparison alone on stdout (the test
// parses all of it) and the table on stderr; --json FILE writes the same
// document and leaves the table on stdout.
func TestCompareJSON(t *testing.T) {
	old, next := partialRuns(t, 0.7)
	code, stdout, stderr := runCompare(old, next, "--json", "-")
	if code != 1 {
		t.Errorf("exit %d, want 1 (a regression)", code)
	}
	type row struct {
		Cell       string   `json:"cell"`
		Metric     string   `json:"metric"`
		Tested     bool     `json:"tested"`
		OldN       int      `json:"old_n"`
		NewN       int      `json:"new_n"`
		OldMedian  *float64 `json:"old_median"`
		NewMedian  *float64 `json:"new_median"`
		Verdict    string   `json:"verdict"`
		Regression bool     `json:"regression"`
	}
	type document struct {
		Old, New     string
		Outcome      string   `json:"outcome"`
		Regressions  int      `json:"regressions"`
		Compared     int      `json:"compared_cells"`
		NotCompared  int      `json:"not_compared"`
		SpecsOnlyOld []string `json:"specs_only_old"`
		Specs        []struct {
			Compared    []string `json:"compared_cells"`
			NotCompared []struct {
				Cell, Why, Reason string
			} `json:"not_compared"`
			Rows     []row `json:"rows"`
			Failures []any `json:"failures"`
		} `json:"specs"`
	}
	var doc document
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Errorf("stdout holds more than one JSON value:\n%s", stdout)
	}
	if doc.Old != old || doc.New != next || doc.Outcome != "regression" || doc.Regressions != 1 || doc.Compared != 1 || doc.NotCompared != 3 || doc.SpecsOnlyOld == nil {
		t.Errorf("document: %+v", doc)
	}
	if len(doc.Specs) != 1 || strings.Join(doc.Specs[0].Compared, ",") != "baseline" || doc.Specs[0].Failures == nil {
		t.Fatalf("specs: %+v", doc.Specs)
	}
	why := map[string]string{}
	for _, nc := range doc.Specs[0].NotCompared {
		why[nc.Cell] = nc.Why
	}
	if fmt.Sprint(why) != "map[hot=16:only_old inflight=64:only_new reactor=et:config_differs]" {
		t.Errorf("not compared: %v", why)
	}
	rows := doc.Specs[0].Rows
	if len(rows) != 1 || rows[0].Cell != "baseline" || rows[0].Metric != results.MetricThroughput || !rows[0].Tested || !rows[0].Regression ||
		rows[0].Verdict != string(results.VerdictWorse) || rows[0].OldN != 16 || rows[0].NewN != 16 || rows[0].OldMedian == nil || *rows[0].NewMedian >= *rows[0].OldMedian {
		t.Errorf("rows: %+v", rows)
	}
	if !strings.Contains(stderr, "REGRESSION") || !strings.Contains(stderr, "not compared:") {
		t.Errorf("the table is not on stderr:\n%s", stderr)
	}

	file := filepath.Join(t.TempDir(), "cmp.json")
	code, stdout2, _ := runCompare(old, next, "--json", file)
	data, err := os.ReadFile(file)
	if err != nil || code != 1 || string(data) != stdout || stdout2 != stderr {
		t.Errorf("--json FILE: exit %d, %v; the file or the table differs from --json -'s", code, err)
	}
	code, stdout, stderr = runCompare(old, next, "--json", filepath.Join(t.TempDir(), "no", "such", "dir.json"))
	if code != 1 || !strings.Contains(stderr, "reactorlab compare: --json: ") {
		t.Errorf("unwritable --json: exit %d, stderr %q", code, stderr)
	}
}

// TestCompareRefusesAGateThatCannotFireAnywhere: with 2 repeats a side
// no change in any cell can be significant: nothing was judged, and the
// comparison is refused (exit 2, with or without --require-all), its
// table warning and its last line saying so, never "no significant
// regression". With enough repeats the same comparison passes
// --require-all.
func TestCompareRefusesAGateThatCannotFireAnywhere(t *testing.T) {
	tmp := t.TempDir()
	old, next := filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
	base := fakeCell{"baseline", cfg("reactor=lt", "hot=4"), 1}
	et := fakeCell{"reactor=et", cfg("reactor=et", "hot=4"), 1}
	fabricateRun(t, old, "few", 2, base, et)
	fabricateRun(t, next, "few", 2, base, et)
	for _, args := range [][]string{{old, next}, {old, next, "--require-all"}} {
		code, stdout, stderr := runCompare(args...)
		if code != exitUsage || !strings.Contains(stdout, "THE GATE CANNOT FIRE for every cell") ||
			!strings.Contains(stdout, "\nnothing judged: the gate cannot fire in any compared cell (baseline, reactor=et)") ||
			strings.Contains(stdout+stderr, "no significant regression") ||
			!strings.HasPrefix(stderr, "reactorlab compare: nothing judged: ") {
			t.Errorf("%v: exit %d (want %d), stdout:\n%s\nstderr:\n%s", args[2:], code, exitUsage, stdout, stderr)
		}
	}
	code, stdout, _ := runCompare(old, next, "--json", "-")
	var doc struct {
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != exitUsage || doc.Outcome != "nothing_judged" {
		t.Errorf("--json -: exit %d, %v, outcome %q", code, err, doc.Outcome)
	}
	// With enough repeats the same comparison passes --require-all.
	old10, next10 := filepath.Join(tmp, "old10"), filepath.Join(tmp, "new10")
	fabricateRun(t, old10, "many", 10, base, et)
	fabricateRun(t, next10, "many", 10, base, et)
	if code, stdout, stderr := runCompare(old10, next10, "--require-all"); code != 0 {
		t.Errorf("10 repeats, --require-all: exit %d (want 0), stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestCompareRefusesALoneBaselineWithOneRunASide: two runs whose only
// common cell is the baseline, one run a side, judged nothing: refused,
// exit 2, not passed.
func TestCompareRefusesALoneBaselineWithOneRunASide(t *testing.T) {
	tmp := t.TempDir()
	old, next := filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
	base := fakeCell{"baseline", cfg("reactor=lt"), 1}
	fabricateRun(t, old, "one", 1, base, fakeCell{"hot=16", cfg("reactor=lt", "hot=16"), 1})
	fabricateRun(t, next, "one", 1, base, fakeCell{"inflight=64", cfg("reactor=lt", "inflight=64"), 1})
	code, stdout, stderr := runCompare(old, next)
	if code != exitUsage || !strings.Contains(stderr, "nothing judged: the gate cannot fire in any compared cell (baseline)") {
		t.Errorf("exit %d (want %d), stdout:\n%s\nstderr:\n%s", code, exitUsage, stdout, stderr)
	}
}

// TestCompareWarnsWhereSomeCellsCannotFire: with 4 repeats the baseline
// (8 runs a side, one per repeat and factor cell) can show a change and
// the factor cells (4 runs a side) cannot: the table warns, naming them,
// and exits 0; --require-all fails the gate (exit 1) naming them.
func TestCompareWarnsWhereSomeCellsCannotFire(t *testing.T) {
	tmp := t.TempDir()
	old, next := filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
	cells := []fakeCell{{"baseline", cfg("reactor=lt", "hot=4"), 1}, {"reactor=et", cfg("reactor=et", "hot=4"), 1}, {"hot=8", cfg("reactor=lt", "hot=8"), 1}}
	fabricateRun(t, old, "some", 4, cells...)
	fabricateRun(t, next, "some", 4, cells...)
	code, stdout, stderr := runCompare(old, next)
	if code != 0 || !strings.Contains(stdout, "THE GATE CANNOT FIRE for cells reactor=et, hot=8") || !strings.Contains(stdout, "\nno significant regression beyond ±10%\n") {
		t.Errorf("without --require-all: exit %d (want 0), stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCompare(old, next, "--require-all")
	if code != 1 || !strings.Contains(stderr, "--require-all: the gate cannot fire for reactor=et, hot=8") {
		t.Errorf("with --require-all: exit %d (want 1), stderr:\n%s", code, stderr)
	}
}

func TestCompareRefusesABareThresholdAboveOne(t *testing.T) {
	tmp := t.TempDir()
	base := fakeCell{"baseline", cfg("reactor=lt"), 1}
	fabricateRun(t, tmp, "one", 10, base, fakeCell{"reactor=et", cfg("reactor=et"), 1})
	for _, tc := range []struct {
		threshold string
		code      int
		want      string
	}{
		{"5", 2, `--threshold "5": a fraction above 1 (500%) is more likely a percentage without its sign: write 5% (or 0.05 for 5%)`},
		{"5%", 0, ""},
		{"0.05", 0, ""},
		{"1", 0, ""},
	} {
		code, _, stderr := runCompare(tmp, tmp, "--threshold", tc.threshold)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("--threshold %s: exit %d (want %d), stderr:\n%s", tc.threshold, code, tc.code, stderr)
		}
	}
}
