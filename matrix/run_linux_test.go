//go:build linux

package matrix

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

const fakeSpec = `
name: fake
repeats: 2
baseline:
  reactor: lt
  hot: 2
  inflight: 4
  control_every: 10ms
  duration: 2s
  warmup: 1s
factors:
  - name: hot
    values: [1, 4]
  - name: callback
    values: [50us]
  - name: reactor
    values: [et]
`

// fakeRunCell stands in for harness.RunCell: it writes an interval log and
// returns a result whose every figure is a function of the run's directory
// relative to the matrix's (cNN-cell/rK...), so the same planned run gives
// the same bytes in a sharded and an unsharded matrix.
func fakeRunCell(root string) func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
	return func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
		rel, err := filepath.Rel(root, c.Dir)
		if err != nil {
			return nil, err
		}
		h := fnv.New64a()
		h.Write([]byte(rel))
		rng := rand.New(rand.NewPCG(h.Sum64(), 1))
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			return nil, err
		}
		start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		rec := record.NewRecorder(start, time.Second, c.Load.Warmup)
		data, _ := rec.Class(loadgen.ClassData)
		ctl, _ := rec.Class(loadgen.ClassControl)
		scale := float64(c.Load.Hot) // more sources, longer waits
		for ms := 0; ms < int((c.Load.Warmup+c.Load.Duration)/time.Millisecond); ms++ {
			rec.Advance(time.Duration(ms) * time.Millisecond)
			data.Record(time.Duration((50 + rng.ExpFloat64()*20*scale) * float64(time.Microsecond)))
			if ms%10 == 0 {
				ctl.Record(time.Duration((40 + rng.ExpFloat64()*3000) * float64(time.Microsecond)))
			}
		}
		rec.Close(c.Load.Warmup + c.Load.Duration)
		var buf bytes.Buffer
		if err := rec.WriteHlog(&buf); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(c.Dir, loadgen.HlogFile), buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		sum := &loadgen.Summary{Valid: true, StartTime: start, MeasuredS: c.Load.Duration.Seconds(), Config: c.Load,
			Latency: rec.Summary(), SelfCheck: loadgen.SelfCheck{Limit: loadgen.LimitTarget, RunS: 3}}
		dh, _ := rec.Histogram(loadgen.ClassData)
		sum.EchoRate = float64(dh.TotalCount()) / sum.MeasuredS
		for i := range c.Load.Hot {
			sum.Conns = append(sum.Conns, loadgen.ConnResult{Name: "hot", Kind: "hot", Accounting: loadgen.Accounting{Echoed: uint64(1000 + rng.IntN(100) + i)}})
		}
		return &harness.CellResult{
			Cell: c, Valid: true, Load: sum,
			Lab: &lab.Result{Mode: lab.ModeLab, Valid: true,
				Server: &lab.ProcResult{UserNs: int64(1e9 + rng.IntN(1e8)), SysNs: 5e8, MaxRSS: 10 << 20, Elapsed: 3 * time.Second}},
		}, nil
	}
}

func fakeOptions(t *testing.T, dir string, sh Shard) Options {
	t.Helper()
	spec, err := Parse([]byte(fakeSpec))
	if err != nil {
		t.Fatal(err)
	}
	return Options{Spec: spec, Source: "test", Text: fakeSpec, Dir: dir, Shard: sh, Placement: lab.Unpinned, RunCell: fakeRunCell(dir)}
}

// TestPlanPairsAndShards checks the plan's promises: each factor cell's run
// right after a baseline run of the same pair and repeat, every cell
// Repeats times, unique directories, and shards that partition the
// unsharded plan whatever their number.
func TestPlanPairsAndShards(t *testing.T) {
	spec, err := Parse([]byte(fakeSpec))
	if err != nil {
		t.Fatal(err)
	}
	key := func(p PlannedRun) string {
		return p.Cell.ID + "|" + p.Pair + "|" + p.Dir + "|" + string(rune('0'+p.Repeat))
	}
	all := spec.Plan(Shard{})
	if want := 2 * spec.Repeats * (len(spec.Expand()) - 1); len(all) != want {
		t.Fatalf("plan has %d runs, want %d", len(all), want)
	}
	perCell := map[string]int{}
	dirs := map[string]bool{}
	for i, p := range all {
		if dirs[p.Dir] {
			t.Fatalf("directory %s twice", p.Dir)
		}
		dirs[p.Dir] = true
		perCell[p.Cell.ID]++
		if p.Cell.ID == BaselineID {
			continue
		}
		prev := all[i-1]
		if prev.Cell.ID != BaselineID || prev.Pair != p.Cell.ID || p.Pair != p.Cell.ID || prev.Repeat != p.Repeat {
			t.Fatalf("run %d (%s r%d) is not preceded by its baseline: %+v", i, p.Cell.ID, p.Repeat, prev)
		}
	}
	for _, c := range spec.Expand()[1:] {
		if perCell[c.ID] != spec.Repeats {
			t.Errorf("cell %s runs %d times, want %d", c.ID, perCell[c.ID], spec.Repeats)
		}
	}
	var want []string
	for _, p := range all {
		want = append(want, key(p))
	}
	slices.Sort(want)
	for n := 1; n <= 6; n++ {
		var got []string
		for i := 1; i <= n; i++ {
			for _, p := range spec.Plan(Shard{Index: i, Count: n}) {
				got = append(got, key(p))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("shards of %d: union differs from the unsharded plan", n)
		}
	}
	if _, err := ParseShard("3/2"); !errors.Is(err, ErrShard) {
		t.Errorf("ParseShard(3/2) = %v, want ErrShard", err)
	}
}

// TestShardMergeEqualsUnsharded runs the fake matrix unsharded and in 3
// shards, merges the shards, and compares: the same runs with the same
// metrics, byte-identical files, and identical merged HDR histograms per
// cell.
func TestShardMergeEqualsUnsharded(t *testing.T) {
	tmp := t.TempDir()
	whole := filepath.Join(tmp, "whole")
	if _, err := Run(context.Background(), fakeOptions(t, whole, Shard{})); err != nil {
		t.Fatal(err)
	}
	var shards []string
	for i := 1; i <= 3; i++ {
		d := filepath.Join(tmp, "shard", string(rune('0'+i)))
		if _, err := Run(context.Background(), fakeOptions(t, d, Shard{Index: i, Count: 3})); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, d)
	}
	merged := filepath.Join(tmp, "merged")
	// Merging is order-independent: give the shards backwards.
	if _, err := Merge(merged, []string{shards[2], shards[1], shards[0]}); err != nil {
		t.Fatal(err)
	}
	a, err := results.ReadManifest(whole)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, a)
	b, err := results.ReadManifest(merged)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Shards) != 3 {
		t.Errorf("merged manifest has %d shards, want 3", len(b.Shards))
	}
	type runKey struct {
		cell, pair, dir string
		repeat          int
	}
	index := func(m *results.Manifest) map[runKey]results.RunRecord {
		out := map[runKey]results.RunRecord{}
		for _, r := range m.Runs {
			out[runKey{r.Cell, r.Pair, r.Dir, r.Repeat}] = r
		}
		return out
	}
	ra, rb := index(a), index(b)
	if len(ra) != len(a.Runs) || len(ra) != len(rb) {
		t.Fatalf("runs: unsharded %d, merged %d", len(ra), len(rb))
	}
	for k, x := range ra {
		y, ok := rb[k]
		if !ok {
			t.Fatalf("merged lacks run %+v", k)
		}
		if !reflect.DeepEqual(x.Metrics, y.Metrics) || x.Valid != y.Valid || !x.MeasuredFrom.Equal(y.MeasuredFrom) {
			t.Errorf("run %+v differs: %v vs %v", k, x.Metrics, y.Metrics)
		}
		for _, f := range []string{loadgen.HlogFile} {
			fa, err1 := os.ReadFile(filepath.Join(whole, x.Dir, f))
			fb, err2 := os.ReadFile(filepath.Join(merged, y.Dir, f))
			if err1 != nil || err2 != nil || !bytes.Equal(fa, fb) {
				t.Errorf("%s/%s differs (%v, %v)", x.Dir, f, err1, err2)
			}
		}
	}
	ha, err := results.CellHistograms(whole, a)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := results.CellHistograms(merged, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ha) != len(a.Cells) {
		t.Fatalf("histograms for %d cells, want %d", len(ha), len(a.Cells))
	}
	// The fake records one data value per millisecond: each valid run
	// adds Duration/1ms measured values, none of its warm-up.
	runsOf := map[string]int64{}
	for _, r := range a.Runs {
		if r.Valid {
			runsOf[r.Cell]++
		}
	}
	for cell, n := range runsOf {
		if got, want := ha[cell][loadgen.ClassData].TotalCount(), n*2000; got != want {
			t.Errorf("cell %s: merged data histogram holds %d values, want %d (%d runs × 2 s at 1/ms)", cell, got, want, n)
		}
	}
	an := results.Analyze(a, ha)
	for _, c := range an.Cells[1:] {
		for _, mr := range c.Metrics {
			if mr.Name == results.MetricThroughput && mr.Pairs != a.Spec.Repeats {
				t.Errorf("cell %s: %d pairs with a ratio, want %d", c.ID, mr.Pairs, a.Spec.Repeats)
			}
		}
	}
	for cell, classes := range ha {
		for class, h := range classes {
			g := hb[cell][class]
			if g == nil || !h.Equals(g) || h.TotalCount() == 0 {
				t.Errorf("cell %s class %s: merged histogram differs from the unsharded one (or is empty)", cell, class)
			}
		}
	}
}

// TestMergeRefuses checks that merge refuses what it cannot join honestly.
func TestMergeRefuses(t *testing.T) {
	tmp := t.TempDir()
	run := func(name string, sh Shard, mutate func(*Options)) string {
		d := filepath.Join(tmp, name)
		o := fakeOptions(t, d, sh)
		if mutate != nil {
			mutate(&o)
		}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		return d
	}
	s1 := run("s1", Shard{Index: 1, Count: 2}, nil)
	s2 := run("s2", Shard{Index: 2, Count: 2}, nil)
	other := run("other", Shard{Index: 2, Count: 2}, func(o *Options) {
		o.Text += "\n# changed\n"
	})
	otherCells := run("other-cells", Shard{Index: 2, Count: 2}, func(o *Options) {
		// The same text, but cells that differ (as a different build's
		// parser might expand them).
		o.Spec.Factors[0].Cells[0].Load.Hot = 3
	})
	otherSplit := run("other-split", Shard{Index: 2, Count: 3}, nil)
	otherBuild := filepath.Join(tmp, "other-build")
	if err := copyTree(s2, otherBuild); err != nil {
		t.Fatal(err)
	}
	mb, err := results.ReadManifest(otherBuild)
	if err != nil {
		t.Fatal(err)
	}
	mb.Tool.Commit, mb.Tool.Executable = "0123456789abcdef", "00"
	if err := results.WriteManifest(otherBuild, mb); err != nil {
		t.Fatal(err)
	}
	// Without a commit, only the executable names the build: the same
	// one merges, another does not.
	unstamped := func(name, executable string, src string) string {
		dir := filepath.Join(tmp, name)
		if err := copyTree(src, dir); err != nil {
			t.Fatal(err)
		}
		m, err := results.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		m.Tool.Commit, m.Tool.Executable = "", executable
		if err := results.WriteManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	u1, u2 := unstamped("unstamped-1", "aa", s1), unstamped("unstamped-2", "aa", s2)
	u2other := unstamped("unstamped-2-other", "bb", s2)
	if _, err := Merge(filepath.Join(tmp, "out-unstamped"), []string{u1, u2}); err != nil {
		t.Errorf("shards of one unstamped executable: %v", err)
	}
	cases := []struct {
		name string
		srcs []string
		want string
	}{
		{"unstamped, another executable", []string{u1, u2other}, "different builds"},
		{"missing shard", []string{s1}, "shard 2/2 missing"},
		{"same shard twice", []string{s1, s1}, "is in both"},
		{"different spec", []string{s1, other}, "different specs"},
		{"different cells", []string{s1, otherCells}, "different cells"},
		{"different split", []string{s1, otherSplit}, "different splits"},
		{"different build", []string{s1, otherBuild}, "different builds"},
	}
	for _, c := range cases {
		_, err := Merge(filepath.Join(tmp, "out-"+strings.ReplaceAll(c.name, " ", "-")), c.srcs)
		if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrMerge with %q", c.name, err, c.want)
		}
	}
	if _, err := Merge(s2, []string{s1, s2}); !errors.Is(err, ErrDirNotEmpty) {
		t.Errorf("merge into a shard's own directory: err = %v, want ErrDirNotEmpty", err)
	}
}

// TestRunInterrupted cancels the matrix during its third run: the run
// comes back invalid, no other starts, the shard is marked interrupted and
// the manifest is readable.
func TestRunInterrupted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := fakeOptions(t, dir, Shard{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := o.RunCell
	n := 0
	o.RunCell = func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
		n++
		res, err := fake(ctx, c)
		if n == 3 {
			cancel()
			res.Valid, res.Invalid = false, []string{"load: interrupted"}
		}
		return res, err
	}
	m, err := Run(ctx, o)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n != 3 || len(m.Runs) != 3 || m.Runs[2].Valid || !m.Shards[0].Interrupted {
		t.Fatalf("ran %d, recorded %d, last valid %v, interrupted %v", n, len(m.Runs), m.Runs[len(m.Runs)-1].Valid, m.Shards[0].Interrupted)
	}
	back, err := results.ReadManifest(dir)
	if err != nil || len(back.Runs) != 3 || !back.Shards[0].Interrupted {
		t.Fatalf("manifest on disk: %v, %+v", err, back)
	}
}

// checkRecords checks what Run records of each run against the plan: the
// pair, the repeat, the directory, and where the measured period starts
// (the fake's start plus the warm-up).
func checkRecords(t *testing.T, m *results.Manifest) {
	t.Helper()
	spec, err := Parse([]byte(fakeSpec))
	if err != nil {
		t.Fatal(err)
	}
	plan := spec.Plan(Shard{})
	if len(m.Runs) != len(plan) {
		t.Fatalf("%d runs recorded, %d planned", len(m.Runs), len(plan))
	}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, r := range m.Runs {
		p := plan[i]
		if r.Cell != p.Cell.ID || r.Pair != p.Pair || r.Repeat != p.Repeat || r.Dir != p.Dir || r.Seq != i+1 {
			t.Errorf("run %d recorded as %s/%s r%d %s seq %d, planned %s/%s r%d %s", i, r.Cell, r.Pair, r.Repeat, r.Dir, r.Seq, p.Cell.ID, p.Pair, p.Repeat, p.Dir)
		}
		if r.Cell != BaselineID && r.Pair != r.Cell {
			t.Errorf("run %d of %s has pair %q", i, r.Cell, r.Pair)
		}
		if want := start.Add(p.Cell.Load.Warmup); !r.MeasuredFrom.Equal(want) {
			t.Errorf("run %d: measured from %v, want %v (start + warm-up)", i, r.MeasuredFrom, want)
		}
	}
}

// TestRunWritesManifestAfterEachRun reads the manifest from disk as each
// run starts: it must already hold every run before it.
func TestRunWritesManifestAfterEachRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := fakeOptions(t, dir, Shard{})
	fake := o.RunCell
	n := 0
	o.RunCell = func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
		n++
		back, err := results.ReadManifest(dir)
		if err != nil {
			t.Fatalf("run %d: manifest on disk: %v", n, err)
		}
		if len(back.Runs) != n-1 {
			t.Errorf("run %d: manifest on disk holds %d runs, want %d", n, len(back.Runs), n-1)
		}
		return fake(ctx, c)
	}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}
