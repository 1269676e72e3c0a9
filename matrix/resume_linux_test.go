//go:build linux

package matrix

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/results"
)

// interruptedRun runs the fake matrix into dir and cancels it during run
// n, which comes back invalid (as the harness's does) unless keepValid.
func interruptedRun(t *testing.T, dir string, n int, keepValid bool) {
	t.Helper()
	o := fakeOptions(t, dir, Shard{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := o.RunCell
	i := 0
	o.RunCell = func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
		i++
		res, err := fake(ctx, c)
		if i == n {
			cancel()
			if !keepValid {
				res.Valid, res.Invalid = false, []string{"lab: interrupted"}
			}
		}
		return res, err
	}
	if _, err := Run(ctx, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: err = %v, want context.Canceled", err)
	}
}

// TestResume interrupts the fake matrix at several points and resumes it:
// the runs kept are the recorded ones but the run the interruption cut
// short and the other half of its pair, they are unchanged, the rest of
// the plan runs (and nothing else), what an unrecorded run left is
// removed, the manifest says it was resumed, and the result equals an
// uninterrupted run's.
func TestResume(t *testing.T) {
	tmp := t.TempDir()
	whole := filepath.Join(tmp, "whole")
	if _, err := Run(context.Background(), fakeOptions(t, whole, Shard{})); err != nil {
		t.Fatal(err)
	}
	want, err := results.ReadManifest(whole)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		at        int  // the run during which the matrix is interrupted
		keepValid bool // that run still came back valid
		killed    bool // the matrix was killed: no interrupted mark
		kept      int
	}{
		// Runs go baseline, cell, baseline, cell...: run 3 is a baseline's.
		{"cut short in a baseline run", 3, false, false, 2},
		{"cut short in a cell run: its pair again", 4, false, false, 2},
		{"between two pairs", 4, true, false, 4},
		{"killed after a baseline run: its pair again", 5, true, true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(tmp, strings.ReplaceAll(tc.name, " ", "-"))
			interruptedRun(t, dir, tc.at, tc.keepValid)
			before, err := results.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.killed {
				before.Shards[0].Interrupted = false
				if err := results.WriteManifest(dir, before); err != nil {
					t.Fatal(err)
				}
			}
			o := fakeOptions(t, dir, Shard{})
			o.Resume = true
			plan := o.Spec.Plan(Shard{})
			// What the run after the last recorded one left behind when
			// the matrix was killed in it.
			stale := filepath.Join(dir, plan[tc.at].Dir, "stale")
			os.MkdirAll(filepath.Dir(stale), 0o755)
			if err := os.WriteFile(stale, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := CheckResume(o)
			if want := (Resumption{Kept: tc.kept, Dropped: tc.at - tc.kept, Total: len(plan)}); err != nil || r != want {
				t.Fatalf("CheckResume = %+v, %v; want %+v", r, err, want)
			}
			fake := o.RunCell
			var ran []string
			o.RunCell = func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
				rel, _ := filepath.Rel(dir, c.Dir)
				ran = append(ran, rel)
				return fake(ctx, c)
			}
			m, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			var wantRan []string
			for _, p := range plan[tc.kept:] {
				wantRan = append(wantRan, p.Dir)
			}
			if !reflect.DeepEqual(ran, wantRan) {
				t.Errorf("resumed runs %q, want %q", ran, wantRan)
			}
			back, err := results.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, back)
			for i := range tc.kept {
				if !reflect.DeepEqual(back.Runs[i], before.Runs[i]) {
					t.Errorf("kept run %d changed:\n%+v\n%+v", i+1, back.Runs[i], before.Runs[i])
				}
			}
			for i, r := range back.Runs {
				if !r.Valid || !reflect.DeepEqual(r.Metrics, want.Runs[i].Metrics) {
					t.Errorf("run %d (%s): valid %v, metrics differ from the uninterrupted run's", i+1, r.Cell, r.Valid)
				}
			}
			sh := back.Shards[0]
			if sh.Interrupted || sh.Finished.IsZero() || len(sh.Resumed) != 1 || sh.Resumed[0].Kept != tc.kept ||
				sh.Resumed[0].Dropped != tc.at-tc.kept || sh.Resumed[0].At.Before(sh.Started) || !reflect.DeepEqual(m.Shards[0], sh) {
				t.Errorf("shard after resuming: %+v", sh)
			}
			if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("what an unrecorded run left is still there: %v", err)
			}
			if _, err := CheckResume(o); !errors.Is(err, ErrComplete) || !errors.Is(err, ErrResume) {
				t.Errorf("resuming a complete run: err = %v, want ErrComplete", err)
			}
		})
	}
}

// TestResumeRefuses checks every directory resume must refuse, each for
// the reason it names, and that it changes nothing in it.
func TestResumeRefuses(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base")
	interruptedRun(t, base, 3, false)
	variant := func(name string, mutate func(m *results.Manifest)) string {
		d := filepath.Join(tmp, name)
		if err := copyTree(base, d); err != nil {
			t.Fatal(err)
		}
		if mutate != nil {
			m, err := results.ReadManifest(d)
			if err != nil {
				t.Fatal(err)
			}
			mutate(m)
			if err := results.WriteManifest(d, m); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	complete := filepath.Join(tmp, "complete")
	if _, err := Run(context.Background(), fakeOptions(t, complete, Shard{})); err != nil {
		t.Fatal(err)
	}
	var shards []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(tmp, "shard", string(rune('0'+i)))
		if _, err := Run(context.Background(), fakeOptions(t, d, Shard{Index: i, Count: 2})); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, d)
	}
	merged := filepath.Join(tmp, "merged")
	if _, err := Merge(merged, shards); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(tmp, "empty")
	os.MkdirAll(empty, 0o755)
	garbled := variant("garbled", nil)
	os.WriteFile(filepath.Join(garbled, results.ManifestFile), []byte("{"), 0o644)
	busy := variant("busy", nil)
	unlock, err := lockDir(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	for _, tc := range []struct {
		name   string
		dir    string
		mutate func(*Options)
		want   string
		is     error
	}{
		{"no such directory", filepath.Join(tmp, "nope"), nil, "not a matrix run directory", ErrResume},
		{"no manifest", empty, nil, "not a matrix run directory", ErrResume},
		{"garbled manifest", garbled, nil, "manifest", ErrResume},
		{"a merge", merged, nil, "a merge of 2 shards", ErrResume},
		{"another spec", base, func(o *Options) { o.Spec.Name = "other" }, `holds a run of spec "fake", not "other"`, ErrResume},
		{"another text", base, func(o *Options) { o.Text += "\n# changed\n" }, "different text", ErrResume},
		{"other cells", base, func(o *Options) { o.Spec.Factors[0].Cells[0].Load.Hot = 3 }, "other cells", ErrResume},
		{"another shard", base, func(o *Options) { o.Shard = Shard{Index: 1, Count: 2} }, "holds shard 1/1, not 1/2", ErrResume},
		// The flags as a person types them: --cpus none (not
		// server=none,loadgen=none), --lab on or off (not lab, loopback);
		// only what differs.
		{"another placement", base, func(o *Options) {
			o.Placement = lab.Placement{Server: lab.ListPlacement(0), Client: lab.ListPlacement(1)}
		},
			"was run with --cpus none, not --cpus server=0,loadgen=1: a resumed run is placed as it was (resume with no --cpus or --lab to use what was recorded)", ErrResume},
		{"another lab mode", base, func(o *Options) { o.Mode = lab.ModeLoopback }, "was run with --lab auto, not --lab off: a resumed", ErrResume},
		{"the lab", base, func(o *Options) { o.Mode = lab.ModeLab }, "was run with --lab auto, not --lab on: a resumed", ErrResume},
		{"both", base, func(o *Options) {
			o.Placement, o.Mode = lab.Placement{Server: lab.ListPlacement(1)}, lab.ModeLab
		},
			"was run with --cpus none --lab auto, not --cpus server=1,loadgen=none --lab on: a resumed", ErrResume},
		{"another build", variant("build", func(m *results.Manifest) { m.Tool.Commit, m.Tool.Executable = "0123456789abcdef", "00" }), nil, "another build (version", ErrResume},
		{"another machine", variant("machine", func(m *results.Manifest) { m.Shards[0].Machine.CPUs = 99 }), nil, "was run on 99 CPUs", ErrResume},
		{"runs out of plan", variant("order", func(m *results.Manifest) { m.Runs[1].Repeat = 2 }), nil, "is not the plan's run 2", ErrResume},
		{"complete", complete, nil, "complete, all 16 planned runs recorded (16 valid)", ErrComplete},
		{"another matrix in it", busy, nil, "another matrix is writing into it", ErrDirBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fakeOptions(t, tc.dir, Shard{})
			o.Resume = true
			if tc.mutate != nil {
				tc.mutate(&o)
			}
			before, _ := os.ReadFile(filepath.Join(tc.dir, results.ManifestFile))
			_, err := CheckResume(o)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckResume: err = %v, want %v with %q", err, tc.is, tc.want)
			}
			ran := 0
			o.RunCell = func(context.Context, harness.CellSpec) (*harness.CellResult, error) {
				ran++
				return nil, errors.New("ran")
			}
			m, err := Run(context.Background(), o)
			if m != nil || !errors.Is(err, tc.is) || ran != 0 {
				t.Errorf("Run: manifest %v, err %v, %d runs; want a refusal (%v) before any run", m != nil, err, ran, tc.is)
			}
			after, _ := os.ReadFile(filepath.Join(tc.dir, results.ManifestFile))
			if string(before) != string(after) {
				t.Errorf("the refused directory's manifest changed")
			}
		})
	}
}

// TestOtherBuild: the same executable is the same build, whatever git
// said of the checkout; otherwise a clean commit names the build, and
// without a commit, or with local changes, it is another build.
func TestOtherBuild(t *testing.T) {
	clean := results.Tool{Version: "(devel)", Commit: "abc", Go: "go1.26.8", Executable: "11"}
	for _, tc := range []struct {
		name string
		a, b results.Tool
		same bool
	}{
		{"same", clean, clean, true},
		{"clean commit, another executable", clean, with(clean, func(t *results.Tool) { t.Executable = "22" }), true},
		{"another commit", clean, with(clean, func(t *results.Tool) { t.Commit, t.Executable = "def", "22" }), false},
		{"another Go", clean, with(clean, func(t *results.Tool) { t.Go, t.Executable = "go1.27", "22" }), false},
		{"a checkout edited since, same executable", clean, with(clean, func(t *results.Tool) { t.Modified = true }), true},
		{"a checkout edited since, another executable", clean, with(clean, func(t *results.Tool) { t.Modified, t.Executable = true, "22" }), false},
		{"changes, same executable", with(clean, func(t *results.Tool) { t.Modified = true }), with(clean, func(t *results.Tool) { t.Modified = true }), true},
		{"changes, another executable", with(clean, func(t *results.Tool) { t.Modified = true }), with(clean, func(t *results.Tool) { t.Modified, t.Executable = true, "22" }), false},
		{"no commit, another executable", with(clean, func(t *results.Tool) { t.Commit = "" }), with(clean, func(t *results.Tool) { t.Commit, t.Executable = "", "22" }), false},
		{"no commit, executable unknown", with(clean, func(t *results.Tool) { t.Commit, t.Executable = "", "" }), with(clean, func(t *results.Tool) { t.Commit, t.Executable = "", "" }), false},
	} {
		if why := otherBuild(tc.a, tc.b); (why == "") != tc.same {
			t.Errorf("%s: otherBuild = %q, want same %v", tc.name, why, tc.same)
		}
	}
	if got := ToolInfo().Executable; len(got) != 64 {
		t.Errorf("ToolInfo().Executable = %q, want a SHA-256 in hex", got)
	}
}

func with(t results.Tool, f func(*results.Tool)) results.Tool {
	f(&t)
	return t
}

// TestRunRefusesBeforeWriting: a cell the harness would refuse, or a
// directory another matrix holds, stops Run before it writes anything.
func TestRunRefusesBeforeWriting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := fakeOptions(t, dir, Shard{})
	o.Placement = lab.Placement{Server: lab.ListPlacement(0), Client: lab.ListPlacement(0)}
	if _, err := Run(context.Background(), o); !errors.Is(err, ErrCell) || !strings.Contains(err.Error(), "cell baseline: ") || !strings.Contains(err.Error(), "both sides on CPU 0") {
		t.Errorf("err = %v, want ErrCell naming the cell and the placement", err)
	}
	if err := Check(o); !errors.Is(err, ErrCell) {
		t.Errorf("Check: err = %v, want ErrCell", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run made its directory: %v", err)
	}
	os.MkdirAll(dir, 0o755)
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Run(context.Background(), fakeOptions(t, dir, Shard{})); !errors.Is(err, ErrDirBusy) {
		t.Errorf("a directory another matrix holds: err = %v, want ErrDirBusy", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a refused run wrote %d entries", len(ents))
	}
}
