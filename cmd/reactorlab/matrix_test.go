//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

func TestMatrixList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"matrix", "--list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"quick (default)", "design-notes", "priority", "scaling", "nightly", "design-notes-load,design-notes-timer,priority,priority-fifo,priority-urgent,priority-100ms,priority-100ms-fifo,priority-100ms-urgent,kinds-budgets-faults"} {
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
	afile := filepath.Join(tmp, "afile")
	os.WriteFile(afile, nil, 0o644)
	for _, tc := range []struct {
		args  []string
		want  []string
		lines int // of stderr: 1 for a refusal, 2 for a usage error
	}{
		{[]string{"matrix", "slow"}, []string{`"slow"`, "quick, design-notes, priority, peers, peers-capacity, scaling, nightly"}, 2},
		{[]string{"matrix", "quick", "--shard", "3/2"}, []string{"--shard", "3/2", "i/n"}, 2},
		{[]string{"matrix", "quick", "--lab", "maybe"}, []string{"maybe", "auto, on, off"}, 2},
		{[]string{"matrix", badSpec}, []string{badSpec + ": line 7: baseline.colour: unknown key"}, 1},
		{[]string{"matrix", "quick", "nightly"}, []string{"one suite"}, 2},
		// Peers not built (this test's directory has none): refused before
		// any run, at the line and field that name the program, saying how
		// to build them.
		{[]string{"matrix", "peers"}, []string{"embedded:peers: line 25: factors[0].values[2] (reactor): ./reactorlab-peers/gnet: no such file or directory",
			matrix.PeersBuild}, 1},
		{[]string{"matrix", "quick", "--out", full}, []string{full, "not empty", "holds 1 entry ("}, 1},
		{[]string{"matrix", "nightly", "--out", full}, []string{full, "not empty"}, 1}, // a suite writes into subdirectories
		// A file where the run directory goes: the --out value's fault.
		{[]string{"matrix", "quick", "--out", afile}, []string{"--out " + afile + ": not a directory (accepted: a new or empty directory)"}, 2},
		{[]string{"matrix", "quick", "--out", filepath.Join(afile, "sub")}, []string{"--out " + filepath.Join(afile, "sub") + ": " + afile + " is not a directory"}, 2},
		{[]string{"matrix", "quick", "--cpus", "server=0,loadgen=0"}, []string{"embedded:quick: spec quick: cell baseline: cpus server=0,loadgen=0: both sides on CPU 0"}, 1},
		{[]string{"matrix", "--resume", full, "--out", full}, []string{"no --out"}, 2},
		{[]string{"matrix", "--resume", full}, []string{"--resume " + full, "not a run directory"}, 1},
		{[]string{"matrix", "--list", "--json", "-"}, []string{"--list takes no --json"}, 2},
		{[]string{"compare", tmp}, []string{"OLD and NEW"}, 2},
		{[]string{"compare", tmp, tmp, "--threshold", "ten"}, []string{"--threshold", "ten"}, 2},
		{[]string{"compare", tmp, tmp, "--threshold", "-5%"}, []string{"--threshold"}, 2},
		{[]string{"compare", tmp, tmp}, []string{"not a run directory"}, 0},
		{[]string{"report", tmp}, []string{"not a run directory"}, 1},
		{[]string{"merge", filepath.Join(tmp, "out")}, []string{"shard directory"}, 2},
	} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := run(tc.args, &stdout, &stderr)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%q: refused after %v", tc.args, el)
		}
		if code != exitUsage || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, want %d; stdout %q (stderr %q)", tc.args, code, exitUsage, stdout.String(), stderr.String())
			continue
		}
		if n := strings.Count(stderr.String(), "\n"); tc.lines > 0 && n != tc.lines {
			t.Errorf("%q: stderr holds %d lines, want %d:\n%s", tc.args, n, tc.lines, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%q: stderr %q does not name %q", tc.args, stderr.String(), w)
			}
		}
	}
}

// TestMatrixRefusesWhatTheChildWould: a spec whose value the server would
// reject is refused before anything runs, naming the file, the line and
// the field, with the message `reactorlab serve` gives for that value;
// an unclosed '{' is reported at its own line.
func TestMatrixRefusesWhatTheChildWould(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "name: x\nbaseline:\n  reactor: lt\n  hot: 1\n  inflight: 4\n"
	var serveErr bytes.Buffer
	if code := run([]string{"serve", "--callback", "50"}, io.Discard, &serveErr); code != exitUsage {
		t.Fatalf("serve --callback 50: exit %d, want %d", code, exitUsage)
	}
	// "reactorlab serve: --callback "50": MESSAGE": the message is what
	// the matrix must give.
	first, _, _ := strings.Cut(serveErr.String(), "\n")
	_, child, ok := strings.Cut(first, `"50": `)
	if !ok || !strings.Contains(child, "50us") {
		t.Fatalf("serve's refusal %q: not the form this test expects", first)
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"callback without a unit", write("cb.yaml", base+"  callback: 50\n  duration: 1s\n"), "cb.yaml: line 6: callback: " + child},
		{"workers with oneshot", write("w.yaml", base+"  workers: 2\n  duration: 1s\nfactors:\n  - {name: reactor, values: [oneshot]}\n"),
			"w.yaml: line 9: factors[0].values[0] (reactor): invalid reactor configuration: workers = 2: oneshot runs callbacks on its own worker threads"},
		{"unclosed {", write("brace.yaml", base+"  duration: 1s\nfactors:\n  - {name: hot, values: [2]\n"), "brace.yaml: line 8: yaml: did not find expected ',' or '}'"},
	} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := run([]string{"matrix", tc.file, "--out", filepath.Join(tmp, "never")}, &stdout, &stderr)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: refused after %v", tc.name, el)
		}
		if want := "reactorlab matrix: " + filepath.Join(tmp, tc.want); code != exitUsage || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("%s: exit %d, stdout %q, stderr\n %q\nwant one line beginning\n %q", tc.name, code, stdout.String(), stderr.String(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "never")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused matrix made its directory: %v", err)
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
		args := []string{"matrix", spec, "--shard", fmt.Sprintf("%d/2", i), "--out", dir, "--cpus", "none"}
		if i == 1 {
			args = append(args, "--json", "-")
		}
		code := run(args, &stdout, &stderr)
		t.Logf("shard %d/2: exit %d in %v", i, code, time.Since(start).Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("shard %d: exit %d\nstdout:\n%s\nstderr:\n%s", i, code, stdout.String(), stderr.String())
		}
		if want := fmt.Sprintf("shard %d/2, 1 spec, about ", i); !strings.Contains(stderr.String(), want) {
			t.Errorf("shard %d: the announcement does not count the one spec as %q:\n%s", i, want, stderr.String())
		}
		if i == 1 {
			// --json -: stdout is the result alone; the summary is on
			// stderr.
			r := parseResult(t, stdout.Bytes())
			if r.Suite != "tiny" || r.Dir != dir || r.Shard != "1/2" || !r.Complete || r.Interrupted || len(r.Specs) != 1 ||
				r.Specs[0].Planned != 2 || r.Specs[0].Runs != 2 || r.Specs[0].Analysis.Spec != "tiny" || len(r.Specs[0].Analysis.Cells) != 3 {
				t.Errorf("--json - result: %+v", r)
			}
			if !strings.Contains(stderr.String(), "## Summary") || !strings.Contains(stderr.String(), "reports: ") {
				t.Errorf("--json -: the summary is not on stderr:\n%s", stderr.String())
			}
		}
		for _, f := range []string{results.ManifestFile, results.AnalysisFile, results.MarkdownFile, results.HTMLFile, results.BenchFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
		}
		shards = append(shards, dir)
	}
	merged := filepath.Join(tmp, "merged")
	mergedJSON := filepath.Join(tmp, "merged.json")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"merge", merged, shards[1], shards[0], "--json", mergedJSON}, &stdout, &stderr); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr.String())
	}
	if b, err := os.ReadFile(mergedJSON); err != nil {
		t.Error(err)
	} else if r := parseResult(t, b); r.Dir != merged || len(r.Specs) != 1 || r.Specs[0].Runs != 4 || r.Specs[0].Planned != 4 || len(r.Specs[0].Analysis.Cells) != 3 {
		t.Errorf("merge --json: %+v", r)
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
	if code := run([]string{"report", merged, "--json", "-"}, &stdout, &stderr); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr.String())
	}
	if r := parseResult(t, stdout.Bytes()); !r.Complete || len(r.Specs) != 1 || r.Specs[0].Runs != 4 {
		t.Errorf("report --json -: %+v", r)
	}
	after, _ := os.ReadFile(filepath.Join(merged, results.AnalysisFile))
	if !bytes.Equal(before, after) {
		t.Errorf("report wrote a different %s from the same runs", results.AnalysisFile)
	}
	stdout.Reset()
	stderr.Reset()
	// One repeat a side: no cell's gate can fire, so nothing is judged,
	// and compare refuses to call that a pass.
	if code := run([]string{"compare", merged, merged}, &stdout, &stderr); code != exitUsage || !strings.Contains(stdout.String()+stderr.String(), "nothing judged") {
		t.Errorf("compare of a one-repeat run with itself: exit %d, want %d saying nothing was judged\n%s%s", code, exitUsage, stdout.String(), stderr.String())
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
	// A spec on one side only is listed as not compared (compare_test.go
	// has the rest); b's regression still fails the gate.
	writeManifest(t, filepath.Join(next, "c"), base, cell)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"compare", old, next}, &stdout, &stderr); code != 1 || !strings.Contains(stdout.String(), "c: only in the new runs") {
		t.Errorf("a spec in NEW only: exit %d (want 1, b's regression)\n%s%s", code, stdout.String(), stderr.String())
	}
}

// parsedResult is what a test reads of matrix --json: matrixResult with
// each spec's summary decoded.
type parsedResult struct {
	matrixResult
	Specs []struct {
		specResult
		Analysis results.Analysis `json:"summary"`
	} `json:"specs"`
}

// parseResult decodes a --json result, failing the test unless the whole
// input is one JSON object.
func parseResult(t *testing.T, b []byte) parsedResult {
	t.Helper()
	var r parsedResult
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("not a matrix result: %v\n%s", err, b)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value:\n%s", b)
	}
	return r
}

const tinySpec = `name: tiny
repeats: 2
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
`

// TestMatrixInterruptedAndResumed interrupts a matrix with SIGINT in its
// third run (a fake cell, so it costs nothing), and continues it with the
// command it prints (the rest measured for real): exit 130 and the
// command, then 0, the runs kept, the manifest saying so; then the
// refusals of --resume, each exit 2 in one line.
func TestMatrixInterruptedAndResumed(t *testing.T) {
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "tiny.yaml")
	os.WriteFile(spec, []byte(tinySpec), 0o644)
	dir := filepath.Join(tmp, "run")
	out := filepath.Join(tmp, "result.json")
	n := 0
	matrixRunCell = func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
		n++
		res, err := matrixFakeCell(c)
		if n == 3 {
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Error("SIGINT did not stop the matrix in 10 s")
			}
			res.Valid, res.Invalid = false, []string{"lab: interrupted"}
		}
		return res, err
	}
	defer func() { matrixRunCell = nil }()
	var stdout, stderr bytes.Buffer
	code := run([]string{"matrix", spec, "--out", dir, "--cpus", "none", "--json", out}, &stdout, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	resume := strings.TrimPrefix(lines[len(lines)-1], "to continue: ")
	if want := "reactorlab matrix --resume " + dir + " --json " + out; code != cli.ExitInterrupted || n != 3 || resume != want {
		t.Fatalf("exit %d after %d runs (want %d after 3), last line %q, want the command %q\n%s", code, n, cli.ExitInterrupted, lines[len(lines)-1], want, stderr.String())
	}
	if !strings.Contains(stdout.String(), "## Summary") {
		t.Errorf("an interrupted matrix does not report what it measured:\n%s", stdout.String())
	}
	b, _ := os.ReadFile(out)
	if r := parseResult(t, b); !r.Interrupted || r.Complete || r.Resume != resume || r.Specs[0].Runs != 3 || r.Specs[0].Planned != 4 {
		t.Errorf("interrupted --json: %+v", r)
	}

	// The command it printed, the rest of the plan run for real.
	matrixRunCell = nil
	stdout.Reset()
	stderr.Reset()
	start := time.Now()
	code = run(strings.Fields(resume)[1:], &stdout, &stderr)
	t.Logf("resumed: exit %d in %v", code, time.Since(start).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "resuming "+dir+", 2 of 4 planned runs kept") {
		t.Errorf("resume does not say what it keeps:\n%s", stderr.String())
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	sh := m.Shards[0]
	if len(m.Runs) != 4 || countInvalid(m) != 0 || sh.Interrupted || len(sh.Resumed) != 1 || sh.Resumed[0].Kept != 2 || sh.Resumed[0].Dropped != 1 || sh.Placement != "server=none,loadgen=none" {
		t.Errorf("resumed manifest: %d runs, %d invalid, shard %+v", len(m.Runs), countInvalid(m), sh)
	}
	b, _ = os.ReadFile(out)
	if r := parseResult(t, b); r.Interrupted || !r.Complete || r.Resume != "" || r.Specs[0].Runs != 4 || len(r.Specs[0].Resumed) != 1 {
		t.Errorf("resumed --json: %+v", r)
	}

	other := filepath.Join(tmp, "other.yaml")
	os.WriteFile(other, []byte(strings.Replace(tinySpec, "repeats: 2", "repeats: 3", 1)), 0o644)
	partial := filepath.Join(tmp, "partial")
	if err := os.MkdirAll(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix", "--resume", dir}, "complete, all 4 planned runs recorded (4 valid): nothing left to run"},
		{[]string{"matrix", other, "--resume", dir}, "whose text differs from " + other + "'s"},
		{[]string{"matrix", "--resume", partial}, "not a run directory"},
		{[]string{"matrix", "--resume", dir, "--shard", "2/2"}, "holds shard 1/1, not 2/2"},
		// The flags as they are typed, only those that differ.
		{[]string{"matrix", "--resume", dir, "--cpus", "server=0,loadgen=1"}, "was run with --cpus none, not --cpus server=0,loadgen=1: a resumed run is placed as it was (resume with no --cpus or --lab to use what was recorded)"},
		{[]string{"matrix", "--resume", dir, "--lab", "off"}, "was run with --lab auto, not --lab off: a resumed run is placed as it was"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(tc.args, &stdout, &stderr); code != exitUsage || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", tc.args[1:], code, stdout.String(), stderr.String(), exitUsage, tc.want)
		}
	}
}

// matrixFakeCell stands in for harness.RunCell: a valid run whose interval log
// holds one data value a millisecond and a PING every 10, written where
// the harness writes its own.
func matrixFakeCell(c harness.CellSpec) (*harness.CellResult, error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rec := record.NewRecorder(start, 100*time.Millisecond, c.Load.Warmup)
	data, _ := rec.Class(loadgen.ClassData)
	ctl, _ := rec.Class(loadgen.ClassControl)
	total := c.Load.Warmup + c.Load.Duration
	for ms := time.Duration(0); ms < total; ms += time.Millisecond {
		rec.Advance(ms)
		data.Record(50*time.Microsecond + ms%7*time.Microsecond)
		if ms%(10*time.Millisecond) == 0 {
			ctl.Record(40 * time.Microsecond)
		}
	}
	rec.Close(total)
	var buf bytes.Buffer
	if err := rec.WriteHlog(&buf); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, loadgen.HlogFile), buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	sum := &loadgen.Summary{Valid: true, StartTime: start, MeasuredS: c.Load.Duration.Seconds(), Config: c.Load,
		Latency: rec.Summary(), SelfCheck: loadgen.SelfCheck{Limit: loadgen.LimitTarget, RunS: total.Seconds()}}
	sum.EchoRate = 1000
	return &harness.CellResult{Cell: c, Valid: true, Load: sum,
		Lab: &lab.Result{Mode: lab.ModeLab, Valid: true,
			Server: &lab.ProcResult{UserNs: 1e8, SysNs: 5e7, MaxRSS: 10 << 20, Elapsed: total}}}, nil
}

// TestMatrixRefusesMissingProgram: a program that is not on $PATH, named
// by a factor's value or by the baseline's target, is refused as
// reactorlab run refuses it, before anything runs: exit 2, one line naming
// the file, line and field, nothing run and no directory made.
func TestMatrixRefusesMissingProgram(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ran := 0
	matrixRunCell = func(context.Context, harness.CellSpec) (*harness.CellResult, error) {
		ran++
		return nil, errors.New("a refused matrix ran a cell")
	}
	defer func() { matrixRunCell = nil }()
	for _, tc := range []struct{ name, file, want string }{
		{"factor value", write("value.yaml", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - name: reactor\n    values: [et, {cmd: \"nosuchprog-xyz --x\"}]\n"),
			"value.yaml: line 5: factors[0].values[1] (reactor): nosuchprog-xyz: executable file not found in $PATH"},
		{"baseline target", write("target.yaml", "name: x\nbaseline:\n  target: {cmd: \"nosuchprog-xyz {addr}\"}\n  hot: 1\n  inflight: 1\n  duration: 1s\n"),
			"target.yaml: line 3: target.cmd: nosuchprog-xyz: executable file not found in $PATH"},
	} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := run([]string{"matrix", tc.file, "--out", filepath.Join(tmp, "never"), "--cpus", "none", "--json", "-"}, &stdout, &stderr)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: refused after %v", tc.name, el)
		}
		if want := "reactorlab matrix: " + filepath.Join(tmp, tc.want); code != exitUsage || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("%s: exit %d, stdout %q, stderr\n %q\nwant exit %d, one line beginning\n %q", tc.name, code, stdout.String(), stderr.String(), exitUsage, want)
		}
	}
	if ran != 0 {
		t.Errorf("%d cells ran", ran)
	}
	if _, err := os.Stat(filepath.Join(tmp, "never")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused matrix made its directory: %v", err)
	}
}

// TestMatrixResumeLineOnlyWithManifest: a matrix that stops on an error
// prints the --resume command (and sets the result's resume field) when
// it wrote a manifest to resume, and neither when it wrote nothing.
func TestMatrixResumeLineOnlyWithManifest(t *testing.T) {
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "tiny.yaml")
	os.WriteFile(spec, []byte(tinySpec), 0o644)
	matrixRunCell = func(context.Context, harness.CellSpec) (*harness.CellResult, error) {
		return nil, errors.New("the fake cell failed")
	}
	defer func() { matrixRunCell = nil }()
	for _, tc := range []struct {
		name, dir string
		resume    bool
	}{
		// Its manifest is written before the first run, which fails.
		{"stopped after the manifest", filepath.Join(tmp, "run"), true},
		// Nothing can be made under /proc: no manifest, nothing to resume.
		{"stopped before it", "/proc/reactorlab-test-no-such-dir", false},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"matrix", spec, "--out", tc.dir, "--cpus", "none", "--json", "-"}, &stdout, &stderr)
		r := parseResult(t, stdout.Bytes())
		want := ""
		if tc.resume {
			want = "reactorlab matrix --resume " + tc.dir + " --json -"
		}
		if code != cli.ExitFail || r.Complete || r.Interrupted || r.Resume != want {
			t.Errorf("%s: exit %d, result %+v; want exit %d, resume %q", tc.name, code, r, cli.ExitFail, want)
		}
		if got := strings.Contains(stderr.String(), "to continue: "+want+"\n"); got != tc.resume || !tc.resume && strings.Contains(stderr.String(), "--resume") {
			t.Errorf("%s: stderr (resume line %v, want %v):\n%s", tc.name, got, tc.resume, stderr.String())
		}
		if !tc.resume && !strings.Contains(stderr.String(), "nothing recorded in "+tc.dir) {
			t.Errorf("%s: stderr does not say nothing was recorded:\n%s", tc.name, stderr.String())
		}
	}
}

// TestMatrixRefusesATargetThatCannotStart: a cmd target that never
// listens is started once before any run and refused at once (within
// --start-timeout and a little), exit 2, one message at the file, line
// and field that give it, in run's words (the same refusal run makes of
// it, but for the port), nothing run and no directory made; --resume
// checks the same way before it continues a run, and records nothing.
func TestMatrixRefusesATargetThatCannotStart(t *testing.T) {
	tmp := t.TempDir()
	const startTimeout = 500 * time.Millisecond
	// Unique to this process and test: its processes are looked for after.
	sleep := fmt.Sprintf("sleep 1000.%d3", os.Getpid())
	ran := 0
	matrixRunCell = func(context.Context, harness.CellSpec) (*harness.CellResult, error) {
		ran++
		return nil, errors.New("the fake cell failed")
	}
	defer func() { matrixRunCell = nil }()
	spec := filepath.Join(tmp, "never.yaml")
	if err := os.WriteFile(spec, []byte("name: never\nrepeats: 2\nbaseline:\n  target: {cmd: '"+sleep+"'}\n  hot: 1\n  inflight: 1\n  duration: 1s\nfactors:\n  - {name: hot, values: [2, 3]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	msg := refusal(t, startTimeout+refusalSlack, "matrix", spec, "--out", out, "--cpus", "none", "--start-timeout", startTimeout.String(), "--json", "-")
	head := "reactorlab matrix: " + spec + ": line 4: target.cmd: "
	if !strings.HasPrefix(msg, head) {
		t.Errorf("the refusal does not begin %q:\n%s", head, msg)
	}
	// run's refusal of the same target, on loopback as the check starts it.
	theirs := refusal(t, startTimeout+refusalSlack, "run", "--target", "cmd:"+sleep, "--lab", "off", "--start-timeout", startTimeout.String(), "--duration", "1s", "--out", filepath.Join(tmp, "cell"))
	if mine, other := port.ReplaceAllString(strings.TrimPrefix(msg, head), ":PORT"), port.ReplaceAllString(strings.TrimPrefix(theirs, "reactorlab run: "), ":PORT"); mine != other {
		t.Errorf("matrix and run word the refusal differently:\nmatrix: %q\nrun:    %q", mine, other)
	}
	if ran != 0 {
		t.Errorf("%d runs ran", ran)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused matrix made its directory: %v", err)
	}

	// --resume: a run stopped after its manifest, whose server (a script)
	// listened then and never listens now.
	echo := buildEcho(t)
	script := filepath.Join(tmp, "server.sh")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(`exec ` + echo + ` --listen "$1"`)
	if err := os.WriteFile(spec, []byte("name: later\nbaseline:\n  target: {cmd: '"+script+" {addr}'}\n  hot: 1\n  inflight: 1\n  duration: 1s\nfactors:\n  - {name: hot, values: [2]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"matrix", spec, "--out", out, "--cpus", "none", "--start-timeout", "5s"}, &stdout, &stderr); code != cli.ExitFail || ran != 1 {
		t.Fatalf("the first matrix: exit %d, %d runs; want exit 1 after its first run:\n%s", code, ran, stderr.String())
	}
	write("exec " + sleep)
	ran = 0
	msg = refusal(t, startTimeout+refusalSlack, "matrix", "--resume", out, "--start-timeout", startTimeout.String())
	if want := "reactorlab matrix: " + spec + ": line 3: target.cmd: the target could not be started, so nothing was measured: cmd:" + script + " {addr}: nothing accepted connections on "; !strings.HasPrefix(msg, want) {
		t.Errorf("--resume's refusal does not begin %q:\n%s", want, msg)
	}
	if ran != 0 {
		t.Errorf("--resume ran %d runs", ran)
	}
	if m, err := results.ReadManifest(out); err != nil || len(m.Runs) != 0 {
		t.Errorf("the manifest after a refused --resume: %v runs, err %v; want none recorded", m, err)
	}
	if pids := processesMatching(strings.Replace(sleep, " ", "\x00", 1) + "\x00"); len(pids) > 0 {
		t.Errorf("the target's process is still there: %v", pids)
	}
}

// TestMatrixReportsEverySpecError: a spec with three bad fields is
// refused with all three, one per line, each naming the file, the line
// and the field after the command's name, exit 2, nothing on stdout.
func TestMatrixReportsEverySpecError(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "three.yaml")
	if err := os.WriteFile(spec, []byte("name: x\nrepeats: 0\nbaseline:\n  reactor: lt\n  hot: 1\n  inflight: 4\n  duration: 1s\n  colour: blue\n  callback: 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"matrix", spec, "--json", "-"}, &stdout, &stderr)
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if code != exitUsage || stdout.Len() != 0 || len(lines) != 3 {
		t.Fatalf("exit %d, stdout %q, %d lines of stderr; want exit 2, nothing, 3 lines:\n%s", code, stdout.String(), len(lines), stderr.String())
	}
	for i, want := range []string{"line 2: repeats: ", "line 8: baseline.colour: unknown key", "line 9: callback: "} {
		if prefix := "reactorlab matrix: " + spec + ": " + want; !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d %q does not begin %q", i+1, lines[i], prefix)
		}
	}
}

// TestMatrixNamesItselfOnce: what matrix prints of the matrix package's
// errors names the matrix once, in the command's name, never again after
// it ("reactorlab matrix: matrix: ..."): a spec error, a bad shard, an
// unknown suite, and a target that could not be started.
func TestMatrixNamesItselfOnce(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	matrixRunCell = func(context.Context, harness.CellSpec) (*harness.CellResult, error) {
		return nil, errors.New("a refused matrix ran a cell")
	}
	defer func() { matrixRunCell = nil }()
	sleep := fmt.Sprintf("sleep 1000.%d5", os.Getpid())
	for _, args := range [][]string{
		{"matrix", write("encoding.yaml", "name: x\xff\xfe\n")}, // ErrSpec's own words
		{"matrix", write("bad.yaml", "name: x\nrepeats: 0\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\n")},
		{"matrix", "quick", "--shard", "3/2"},
		{"matrix", "slow"},
		{"matrix", write("never.yaml", "name: never\nbaseline: {target: {cmd: '"+sleep+"'}, hot: 1, inflight: 1, duration: 1s}\n"),
			"--out", filepath.Join(tmp, "out"), "--cpus", "none", "--start-timeout", "300ms"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d:\n%s", args, code, exitUsage, stderr.String())
		}
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.HasPrefix(line, "reactorlab matrix: ") && strings.Count(line, "matrix: ") != 1 {
				t.Errorf("%q: the matrix named twice: %q", args, line)
			}
		}
	}
}

// TestMatrixPrintsABuiltInSuite: --print SUITE writes the suite's YAML as
// it is built in (quick's file, byte for byte), which read back as a spec
// file plans the runs the suite plans; an unknown suite, an argument or a
// run's flag beside it is a usage error naming what is accepted.
func TestMatrixPrintsABuiltInSuite(t *testing.T) {
	file, err := os.ReadFile(filepath.Join("..", "..", "matrix", "specs", "quick.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"matrix", "--print", "quick"}, &stdout, &stderr); code != cli.ExitOK || stderr.Len() != 0 {
		t.Fatalf("--print quick: exit %d, stderr %q", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), file) {
		t.Errorf("--print quick wrote %d bytes that are not matrix/specs/quick.yaml's %d:\n%s", stdout.Len(), len(file), stdout.String())
	}
	printed, err := matrix.ParseSuite(stdout.Bytes())
	if err != nil {
		t.Fatalf("the printed suite does not parse: %v", err)
	}
	text, err := matrix.EmbeddedText("quick")
	if err != nil {
		t.Fatal(err)
	}
	suite, err := matrix.ParseSuite([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	planOf := func(specs []*matrix.Spec) []string {
		var out []string
		for _, s := range specs {
			for _, r := range s.Plan(matrix.Shard{}) {
				out = append(out, fmt.Sprintf("%s %s r%d %s %s", s.Name, r.Cell.ID, r.Repeat, r.Dir, r.Cell.Describe()))
			}
		}
		return out
	}
	if got, want := planOf(printed), planOf(suite); strings.Join(got, "\n") != strings.Join(want, "\n") || len(want) == 0 {
		t.Errorf("the printed suite plans\n%s\nthe suite plans\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A suite of several files: the one stream `matrix nightly` reads.
	stdout.Reset()
	if code := run([]string{"matrix", "--print", "nightly"}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("--print nightly: exit %d: %s", code, stderr.String())
	}
	if want, _ := matrix.EmbeddedText("nightly"); stdout.String() != want {
		t.Errorf("--print nightly is not the suite's text")
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix", "--print", "slow"}, `no embedded suite "slow" (accepted: quick, design-notes, priority, peers, peers-capacity, scaling, nightly, multiloop, proactor)`},
		{[]string{"matrix", "--print", "quick", "nightly"}, `--print takes no argument (got "nightly")`},
		{[]string{"matrix", "--print", "quick", "--out", t.TempDir()}, "--print takes no --out"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(tc.args, &stdout, &stderr); code != cli.ExitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d naming %q", tc.args, code, stdout.String(), stderr.String(), cli.ExitUsage, tc.want)
		}
	}
}

// TestMatrixSpecTakesRunDefaults pins what a spec that leaves a field out
// runs to what `reactorlab run` runs without the flag: every load knob
// (after loadgen's own defaults, as either one's run applies them), the
// reactor's configuration, and the flags both commands have (where and
// how the cells run). The deliberate difference, hot, inflight and
// control_every left out being 0 (a spec's sources are the ones it
// writes), is written at run's values here, pinned to 0 when left out,
// shown in each cell's configuration, and said in README's spec section.
func TestMatrixSpecTakesRunDefaults(t *testing.T) {
	c, f := newRunCommand()
	if err := c.Flags.Parse(nil); err != nil {
		t.Fatal(err)
	}
	deliberate := []string{"hot", "inflight", "control_every"}
	spec := "name: defaults\nbaseline:\n  reactor: lt\n"
	for _, name := range deliberate {
		k, ok := loadgen.LookupKnob(name)
		if !ok {
			t.Fatalf("no knob %s", name)
		}
		spec += fmt.Sprintf("  %s: %s\n", name, k.Text(&f.load))
	}
	s, err := matrix.Parse([]byte(spec))
	if err != nil {
		t.Fatalf("a spec leaving out every field but %v: %v\n%s", deliberate, err, spec)
	}
	rc, lc, err := s.Expand()[0].Configs()
	if err != nil {
		t.Fatal(err)
	}
	runLoad, specLoad := f.load.WithDefaults(), lc.WithDefaults()
	for _, k := range loadgen.Knobs {
		// The same value, or (arrivals) the zero value that loadgen runs
		// as run's and the knob's rule prints as it (SpecRule.Absent).
		got, want := reflect.ValueOf(k.Field(&specLoad)).Elem().Interface(), reflect.ValueOf(k.Field(&runLoad)).Elem().Interface()
		if !k.Equal(&specLoad, &runLoad) {
			t.Errorf("%s left out of a spec is %v; run's default is %v", k.Name, got, want)
		}
	}
	if !reflect.DeepEqual(rc, f.cfg) {
		t.Errorf("a spec's reactor configuration\n %+v\nis not run's default\n %+v", rc, f.cfg)
	}
	inv := &matrixInvocation{c: cli.New("reactorlab matrix", matrixSynopsis, matrixDescription)}
	inv.defineFlags()
	for _, name := range []string{"cpus", "lab", "grace", "start-timeout"} {
		m, r := inv.c.Flags.Lookup(name), c.Flags.Lookup(name)
		if m == nil || r == nil || m.DefValue != r.DefValue {
			t.Errorf("--%s: matrix's default and run's differ: %v, %v", name, m, r)
		}
	}

	// Left out, the deliberate three are 0, and each cell's configuration
	// (manifest.json, report.html) shows them.
	s, err = matrix.Parse([]byte("name: steady\nbaseline: {reactor: lt, steady: 2, rate: 1000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cell := s.Expand()[0]
	cfg := cell.Info().Config
	for _, name := range deliberate {
		k, _ := loadgen.LookupKnob(name)
		if !reflect.ValueOf(k.Field(&cell.Load)).Elem().IsZero() || cfg[name] != k.Text(&cell.Load) {
			t.Errorf("%s left out: %v, configuration %q; want 0, shown", name, reflect.ValueOf(k.Field(&cell.Load)).Elem(), cfg[name])
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Three differ on purpose: `hot`, `inflight`\nand `control_every` left out are 0, not `run`'s 1, 16 and 10ms"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q", want)
	}
}
