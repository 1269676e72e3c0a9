//go:build linux

package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/results"
)

// placedSpec varies the two fields a cell's placement follows from: its
// own cpus, and the load generator's loops.
const placedSpec = `
name: placed
repeats: 1
baseline: {reactor: lt, hot: 2, inflight: 4, control_every: 10ms, duration: 2s, warmup: 1s}
factors:
  - {name: cpus, values: ["server=none,loadgen=count:1"]}
  - {name: loadgen_loops, values: [2]}
  - {name: hot, values: [3]}
`

// placedOptions are the fake matrix of placedSpec into dir, placed by cpus.
func placedOptions(t *testing.T, dir string, cpus lab.Placement) Options {
	t.Helper()
	spec, err := Parse([]byte(placedSpec))
	if err != nil {
		t.Fatal(err)
	}
	return Options{Spec: spec, Source: "test", Text: placedSpec, Dir: dir, Placement: cpus, RunCell: fakeRunCell(dir)}
}

// TestManifestRecordsPlacement: the manifest keeps the placement as asked
// (a count stays a count), and records beside it what it resolved to
// here, the load generator's loops as resolved, the rule of each default
// that was taken, and each cell placed otherwise than the baseline (its
// own cpus, its own loops); a cell placed as the baseline is not listed.
func TestManifestRecordsPlacement(t *testing.T) {
	allowed, err := lab.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("this process may use %d CPU(s); the test needs 2", len(allowed))
	}
	first, second := strconv.Itoa(allowed[0]), strconv.Itoa(allowed[1])
	loopsDefault := "default: " + harness.DefaultLoadLoopsRule
	dir := filepath.Join(t.TempDir(), "count")
	m, err := Run(context.Background(), placedOptions(t, dir, lab.Placement{Server: lab.CountPlacement(1), Client: lab.CountPlacement(1)}))
	if err != nil {
		t.Fatal(err)
	}
	sh := m.Shards[0]
	want := results.Resolved{PlacementResolved: "server=" + first + ",loadgen=" + second, LoadgenLoops: 1, LoadgenLoopsDefault: loopsDefault}
	if sh.Placement != "server=count:1,loadgen=count:1" || sh.Resolved != want {
		t.Errorf("shard: placement %q, resolved %+v; want the count as asked and %+v", sh.Placement, sh.Resolved, want)
	}
	wantCells := []results.CellPlacement{
		{Cell: "cpus=server=none,loadgen=count:1", Resolved: results.Resolved{PlacementResolved: "server=none,loadgen=" + first, LoadgenLoops: 1, LoadgenLoopsDefault: loopsDefault}},
		{Cell: "loadgen_loops=2", Resolved: results.Resolved{PlacementResolved: want.PlacementResolved, LoadgenLoops: 2}},
	}
	if !slices.Equal(sh.CellPlacements, wantCells) {
		t.Errorf("cell placements %+v, want %+v", sh.CellPlacements, wantCells)
	}
	read, err := results.ReadManifest(dir)
	if err != nil || read.Shards[0].Resolved != want || !slices.Equal(read.Shards[0].CellPlacements, wantCells) {
		t.Errorf("read back: %v, %+v", err, read)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, results.MarkdownFile))
	for _, line := range []string{"  - placed: " + want.Text(), "  - cell `loadgen_loops=2` placed: " + wantCells[1].Text()} {
		if err != nil || !strings.Contains(string(md), line+"\n") {
			t.Errorf("report.md (%v) does not say %q:\n%s", err, line, md)
		}
	}

	dir = filepath.Join(t.TempDir(), "default")
	o := placedOptions(t, dir, lab.DefaultPlacement(allowed))
	o.DefaultPlacement = true
	if m, err = Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sh = m.Shards[0]
	if sh.Placement != lab.DefaultPlacement(allowed).String() || sh.PlacementDefault != "default: "+lab.DefaultPlacementRule ||
		sh.PlacementResolved != lab.DefaultPlacement(allowed).String() {
		t.Errorf("the default placement: %q, resolved %+v; want it and its rule", sh.Placement, sh.Resolved)
	}
	if len(sh.CellPlacements) == 0 || sh.CellPlacements[0].PlacementDefault != "" {
		t.Errorf("a cell with its own cpus is no default: %+v", sh.CellPlacements)
	}
}

// TestResumeChecksPlacement: a run whose recorded placement resolves
// otherwise here (a fault planted in its manifest: another CPU list,
// another cell's loops) is refused, saying so; one recorded before
// placements were (the fields absent from its JSON) still reads and
// resumes.
func TestResumeChecksPlacement(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base")
	interruptedRun(t, base, 3, false)
	for _, tc := range []struct {
		name   string
		mutate func(*results.ShardInfo)
		want   string
	}{
		{"placed otherwise", func(s *results.ShardInfo) { s.PlacementResolved = "server=7,loadgen=8" }, "was placed on server=7,loadgen=8, 1 load generator loop ("},
		{"a cell placed otherwise", func(s *results.ShardInfo) {
			s.CellPlacements = append(s.CellPlacements, results.CellPlacement{Cell: "hot=4", Resolved: results.Resolved{PlacementResolved: "server=none,loadgen=none", LoadgenLoops: 3}})
		}, "its cells were placed otherwise than they resolve to here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(tmp, strings.ReplaceAll(tc.name, " ", "-"))
			if err := copyTree(base, dir); err != nil {
				t.Fatal(err)
			}
			m, err := results.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(&m.Shards[0])
			if err := results.WriteManifest(dir, m); err != nil {
				t.Fatal(err)
			}
			o := fakeOptions(t, dir, Shard{})
			o.Resume = true
			if _, err := CheckResume(o); !errors.Is(err, ErrResume) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckResume: %v, want ErrResume with %q", err, tc.want)
			}
		})
	}

	old := filepath.Join(tmp, "old")
	if err := copyTree(base, old); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(old, results.ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	shard := raw["shards"].([]any)[0].(map[string]any)
	for _, k := range []string{"placement_resolved", "placement_default", "loadgen_loops", "loadgen_loops_default", "cell_placements"} {
		delete(shard, k)
	}
	if b, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	o := fakeOptions(t, old, Shard{})
	o.Resume = true
	if _, err := CheckResume(o); err != nil {
		t.Fatalf("a manifest without placements: %v", err)
	}
	m, err := Run(context.Background(), o)
	if err != nil || m.Shards[0].Resolved != (results.Resolved{}) {
		t.Errorf("resuming it: %v; resolved %+v, want it left unrecorded", err, m.Shards[0].Resolved)
	}
}
