//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/results"
)

func TestMatrixList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"matrix", "--list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"quick (default)", "design-notes", "priority", "nightly", "design-notes-load,design-notes-timer,priority,kinds-budgets-faults"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("--list does not show %q:\n%s", want, stdout.String())
		}
	}
}

func TestMatrixRefusesBadUsage(t *testing.T) {
	tmp := t.TempDir()
	badSpec := filepath.Join(tmp, "bad.yaml")
	os.WriteFile(badSpec, []byte("name: bad\nbaseline:\n  reactor: lt\n  hot: 1\n  inflight: 4\n  duration: 1s\n  colour: blue\n"), 0o644)
	full := filepath.Join(tmp, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "keep"), nil, 0o644)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"matrix", "slow"}, []string{`"slow"`, "quick, design-notes, priority, peers, peers-capacity, nightly"}},
		{[]string{"matrix", "quick", "--shard", "3/2"}, []string{"--shard", "3/2", "i/n"}},
		{[]string{"matrix", "quick", "--lab", "maybe"}, []string{"maybe", "auto, on, off"}},
		{[]string{"matrix", badSpec}, []string{"line 7", "colour", "unknown key"}},
		{[]string{"matrix", "quick", "nightly"}, []string{"one suite"}},
		// Peers not built (this test's directory has none): refused before
		// any run, naming the missing program.
		{[]string{"matrix", "peers"}, []string{"peers-pingpong-1", "./reactorlab-peers/gnet", "no such file"}},
		{[]string{"matrix", "quick", "--out", full}, []string{full, "not empty"}},
		{[]string{"matrix", "nightly", "--out", full}, []string{full, "not empty"}}, // a suite writes into subdirectories
		{[]string{"compare", tmp}, []string{"OLD and NEW"}},
		{[]string{"compare", tmp, tmp, "--threshold", "ten"}, []string{"--threshold", "ten"}},
		{[]string{"compare", tmp, tmp, "--threshold", "-5%"}, []string{"--threshold"}},
		{[]string{"compare", tmp, tmp}, []string{"not a run directory"}},
		{[]string{"report", tmp}, []string{"not a run directory"}},
		{[]string{"merge", filepath.Join(tmp, "out")}, []string{"shard directory"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, code, exitUsage, stderr.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%q: stderr %q does not name %q", tc.args, stderr.String(), w)
			}
		}
	}
}

// TestMatrixShardMergeReportCompare runs a tiny spec for real, in two
// shards, merges them, renders the reports again and compares the merge
// with itself: the commands the README and the nightly workflow use, end
// to end.
func TestMatrixShardMergeReportCompare(t *testing.T) {
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "tiny.yaml")
	os.WriteFile(spec, []byte(`name: tiny
repeats: 1
baseline:
  reactor: lt
  hot: 1
  inflight: 4
  control_every: 10ms
  duration: 300ms
  warmup: 100ms
factors:
  - name: reactor
    values: [et]
  - name: hot
    values: [2]
`), 0o644)
	var shards []string
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(tmp, fmt.Sprintf("shard%d", i))
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := run([]string{"matrix", spec, "--shard", fmt.Sprintf("%d/2", i), "--out", dir, "--cpus", "none"}, &stdout, &stderr)
		t.Logf("shard %d/2: exit %d in %v", i, code, time.Since(start).Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("shard %d: exit %d\nstdout:\n%s\nstderr:\n%s", i, code, stdout.String(), stderr.String())
		}
		for _, f := range []string{results.ManifestFile, results.AnalysisFile, results.MarkdownFile, results.HTMLFile, results.BenchFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
		}
		shards = append(shards, dir)
	}
	merged := filepath.Join(tmp, "merged")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"merge", merged, shards[1], shards[0]}, &stdout, &stderr); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr.String())
	}
	m, err := results.ReadManifest(merged)
	if err != nil {
		t.Fatal(err)
	}
	// 2 factor cells × 1 repeat × (baseline + cell).
	if len(m.Runs) != 4 || len(m.Shards) != 2 {
		t.Fatalf("merged: %d runs in %d shards, want 4 in 2", len(m.Runs), len(m.Shards))
	}
	md, err := os.ReadFile(filepath.Join(merged, results.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"baseline", "reactor=et", "hot=2"} {
		if !strings.Contains(string(md), id) {
			t.Errorf("merged report.md does not mention cell %s", id)
		}
	}
	// The report command writes the same files again.
	before, _ := os.ReadFile(filepath.Join(merged, results.AnalysisFile))
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"report", merged}, &stdout, &stderr); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr.String())
	}
	after, _ := os.ReadFile(filepath.Join(merged, results.AnalysisFile))
	if !bytes.Equal(before, after) {
		t.Errorf("report wrote a different %s from the same runs", results.AnalysisFile)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"compare", merged, merged}, &stdout, &stderr); code != 0 {
		t.Errorf("compare of a run with itself: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// writeManifest writes a run directory whose runs have the given
// throughputs, baseline first then one factor cell, paired.
func writeManifest(t *testing.T, dir string, base, cell []float64) {
	t.Helper()
	m := &results.Manifest{
		Format: results.ManifestFormat,
		Spec:   results.SpecInfo{Name: "gate", Text: "x", Repeats: len(cell)},
		Cells: []results.CellInfo{
			{ID: "baseline", Config: map[string]string{"reactor": "lt"}},
			{ID: "reactor=et", Factor: "reactor", Value: "et", Config: map[string]string{"reactor": "et"}},
		},
		Shards: []results.ShardInfo{{Index: 1, Count: 1}},
	}
	seq := 0
	for r := range cell {
		for _, c := range []struct {
			id string
			v  float64
		}{{"baseline", base[r]}, {"reactor=et", cell[r]}} {
			seq++
			m.Runs = append(m.Runs, results.RunRecord{Shard: 1, Seq: seq, Cell: c.id, Repeat: r + 1, Pair: "reactor=et",
				Dir: fmt.Sprintf("runs/%s/r%d", strings.ReplaceAll(c.id, "=", "-"), r+1), Valid: true,
				Metrics: map[string]float64{results.MetricThroughput: c.v}})
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// TestCompareGate: compare exits 0 for two runs alike, 1 for a planted
// 30% throughput regression, and 0 for the same regression under a
// threshold above it.
func TestCompareGate(t *testing.T) {
	tmp := t.TempDir()
	old, same, worse := filepath.Join(tmp, "old"), filepath.Join(tmp, "same"), filepath.Join(tmp, "worse")
	writeManifest(t, old, []float64{100, 103, 98, 101, 99, 102, 100, 97}, []float64{110, 108, 112, 109, 111, 107, 110, 113})
	writeManifest(t, same, []float64{101, 99, 100, 102, 98, 103, 97, 100}, []float64{109, 111, 108, 112, 110, 107, 113, 110})
	writeManifest(t, worse, []float64{70, 72, 69, 71, 68, 73, 70, 71}, []float64{77, 76, 78, 75, 79, 77, 76, 78})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare", old, same}, 0, "no significant regression"},
		{[]string{"compare", old, worse}, 1, "REGRESSION"},
		{[]string{"compare", old, worse, "--threshold", "40%"}, 0, "no significant regression"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("%q: exit %d (want %d), output lacks %q:\n%s%s", tc.args[1:], code, tc.code, tc.want, stdout.String(), stderr.String())
		}
	}
}

// TestCompareSuite: a suite's run directories hold one subdirectory per
// spec; compare judges every one, and a regression in the second spec
// alone fails the gate.
func TestCompareSuite(t *testing.T) {
	tmp := t.TempDir()
	base := []float64{100, 103, 98, 101, 99, 102, 100, 97}
	cell := []float64{110, 108, 112, 109, 111, 107, 110, 113}
	worse := []float64{77, 76, 78, 75, 79, 77, 76, 78}
	old, next := filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
	writeManifest(t, filepath.Join(old, "a"), base, cell)
	writeManifest(t, filepath.Join(old, "b"), base, cell)
	writeManifest(t, filepath.Join(next, "a"), base, cell)
	writeManifest(t, filepath.Join(next, "b"), base, worse)
	var stdout, stderr bytes.Buffer
	code := run([]string{"compare", old, next}, &stdout, &stderr)
	out := stdout.String()
	if code != 1 {
		t.Errorf("exit %d, want 1 (a regression in b)\n%s%s", code, out, stderr.String())
	}
	ia, ib := strings.Index(out, "## a"), strings.Index(out, "## b")
	if ia < 0 || ib < ia || strings.Contains(out[ia:ib], "REGRESSION") || !strings.Contains(out[ib:], "REGRESSION") {
		t.Errorf("want sections a (clean) then b (with the regression):\n%s", out)
	}
	// Specs that differ between the two are refused, not half compared.
	writeManifest(t, filepath.Join(next, "c"), base, cell)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"compare", old, next}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "not runs of the same suite") {
		t.Errorf("different suites: exit %d, stderr %q", code, stderr.String())
	}
}
