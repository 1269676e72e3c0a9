//go:build linux

package matrix

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/results"
)

// ErrResume is wrapped by every reason CheckResume (and Run with
// Options.Resume) refuses a directory: it is not a matrix run, it holds
// another spec, shard, placement or build's runs, or it is complete.
var ErrResume = errors.New("matrix: cannot resume")

// ErrComplete is wrapped (beside ErrResume) when the run to resume has
// nothing left to run.
var ErrComplete = errors.New("nothing left to run")

// ErrDirBusy is wrapped when another matrix holds the run directory.
var ErrDirBusy = errors.New("matrix: run directory in use")

// Resumption is what resuming a run directory does with its plan of Total
// runs: the first Kept (recorded, in plan order) stay as they are, Dropped
// runs recorded before are run again, and every planned run from Kept on
// runs.
type Resumption struct {
	Kept, Dropped, Total int
}

// CheckResume reports what Run with Options.Resume would do with
// opt.Dir, or why it would refuse it (an error wrapping ErrResume, naming
// the directory and the difference). The directory must hold the manifest
// of one run (not a merge) of the same spec (name, text, repeats and the
// cells this build expands it into), the same shard, placement and lab
// mode (and, when the manifest recorded them, the same placements and load
// generator loops as they resolve here: otherPlacement), on a machine with
// the same CPUs, by the same build: the same
// version, commit and Go, and, when the commit does not tell the code (a
// work tree with changes, or no commit known), the same executable (its
// SHA-256). Its runs must be the plan's first ones, in order.
//
// What is kept: every recorded run but the last when the shard was
// interrupted and that run came back invalid (the interruption cut it
// short), and, when the next run to make is a factor cell's, not its
// baseline's run before it: a pair is measured side by side or not at
// all, so that the machine's drift still cancels in its ratio. Runs found
// invalid before the interruption are results, kept as they are. A run
// with nothing left to run is complete: refused, wrapping ErrComplete too.
// A directory another matrix is writing into is refused with ErrDirBusy.
func CheckResume(opt Options) (Resumption, error) {
	if opt.Spec == nil {
		return Resumption{}, errors.New("matrix: no spec")
	}
	_, r, err := resumeManifest(opt, opt.Spec.Plan(opt.Shard.orAll()))
	if err != nil {
		return r, err
	}
	unlock, err := lockDir(opt.Dir)
	if err != nil {
		return r, err
	}
	unlock()
	return r, nil
}

// resumeManifest reads and checks opt.Dir's manifest against opt and the
// plan, and returns it ready to continue: the kept runs only, not
// interrupted, with a results.Resume entry.
func resumeManifest(opt Options, plan []PlannedRun) (*results.Manifest, Resumption, error) {
	dir := opt.Dir
	refuse := func(format string, a ...any) (*results.Manifest, Resumption, error) {
		return nil, Resumption{}, fmt.Errorf("%w: %s: %s", ErrResume, dir, fmt.Sprintf(format, a...))
	}
	m, err := results.ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return refuse("no %s: not a matrix run directory", results.ManifestFile)
	}
	if err != nil {
		return nil, Resumption{}, fmt.Errorf("%w: %w", ErrResume, err)
	}
	sh := opt.Shard.orAll()
	spec := opt.Spec
	if len(m.Shards) != 1 {
		return refuse("a merge of %d shards (accepted: the directory of one matrix run or shard)", len(m.Shards))
	}
	shard := &m.Shards[0]
	switch {
	case m.Spec.Name != spec.Name:
		return refuse("holds a run of spec %q, not %q", m.Spec.Name, spec.Name)
	case m.Spec.Text != opt.Text || m.Spec.Repeats != spec.Repeats:
		return refuse("spec %s was run from a different text (from %s; this one from %s): resume with the spec it was run with", spec.Name, m.Spec.Source, opt.Source)
	case !sameCells(m.Cells, spec.Expand()):
		return refuse("this build expands spec %s into other cells than the run's", spec.Name)
	case shard.Index != sh.Index || shard.Count != sh.Count:
		return refuse("holds shard %d/%d, not %s", shard.Index, shard.Count, sh)
	case shard.Placement != opt.Placement.String() || shard.Mode != string(orMode(opt.Mode)):
		var was, asked []string
		if shard.Placement != opt.Placement.String() {
			was, asked = append(was, "--cpus "+cpusFlag(shard.Placement)), append(asked, "--cpus "+cpusFlag(opt.Placement.String()))
		}
		if shard.Mode != string(orMode(opt.Mode)) {
			was, asked = append(was, "--lab "+labFlag(shard.Mode)), append(asked, "--lab "+labFlag(string(orMode(opt.Mode))))
		}
		return refuse("was run with %s, not %s: a resumed run is placed as it was (resume with no --cpus or --lab to use what was recorded)", strings.Join(was, " "), strings.Join(asked, " "))
	}
	if why, err := otherPlacement(shard, opt, plan); err != nil || why != "" {
		if err != nil {
			return nil, Resumption{}, err
		}
		return refuse("%s: a resumed run is placed as it was", why)
	}
	if why := otherBuild(m.Tool, ToolInfo()); why != "" {
		return refuse("was run by another build (%s): resume it with the build that made it", why)
	}
	if here := MachineInfo(); shard.Machine.CPUModel != here.CPUModel || shard.Machine.CPUs != here.CPUs {
		return refuse("was run on %d CPUs of %q, this machine has %d of %q", shard.Machine.CPUs, shard.Machine.CPUModel, here.CPUs, here.CPUModel)
	}
	if len(m.Runs) > len(plan) {
		return refuse("records %d runs, its plan has %d", len(m.Runs), len(plan))
	}
	for i, r := range m.Runs {
		p := plan[i]
		if r.Shard != sh.Index || r.Seq != i+1 || r.Cell != p.Cell.ID || r.Repeat != p.Repeat || r.Pair != p.Pair || r.Dir != p.Dir {
			return refuse("run %d of the manifest (%s repeat %d, seq %d) is not the plan's run %d (%s repeat %d)", i+1, r.Cell, r.Repeat, r.Seq, i+1, p.Cell.ID, p.Repeat)
		}
	}
	kept := len(m.Runs)
	if shard.Interrupted && kept > 0 && !m.Runs[kept-1].Valid {
		kept--
	}
	if kept < len(plan) && kept > 0 && plan[kept].Pair != "" && plan[kept].Cell.ID != BaselineID {
		kept-- // the baseline run of the pair that is run again
	}
	res := Resumption{Kept: kept, Dropped: len(m.Runs) - kept, Total: len(plan)}
	if kept == len(plan) {
		return nil, res, fmt.Errorf("%w: %s: complete, all %d planned runs recorded (%d valid): %w", ErrResume, dir, len(plan), m.ShardRuns(sh.Index).Valid, ErrComplete)
	}
	m.Runs = m.Runs[:kept]
	shard.Interrupted = false
	shard.Finished = time.Time{}
	shard.Resumed = append(shard.Resumed, results.Resume{At: time.Now().UTC(), Kept: res.Kept, Dropped: res.Dropped})
	return m, res, nil
}

// otherPlacement says how the placements recorded for shard (its
// Resolved and CellPlacements) differ from what opt's placement resolves
// to here for plan ("" when they do not, or when none was recorded: a
// manifest written before they were). The error is a cell the harness
// refuses.
func otherPlacement(shard *results.ShardInfo, opt Options, plan []PlannedRun) (string, error) {
	if shard.Resolved == (results.Resolved{}) {
		return "", nil
	}
	cells, err := harnessCells(plan, opt)
	if err != nil {
		return "", err
	}
	base, others, err := placements(plan, cells, opt)
	if err != nil {
		return "", err
	}
	if base.PlacementResolved != shard.PlacementResolved || base.LoadgenLoops != shard.LoadgenLoops {
		return fmt.Sprintf("was placed on %s, which resolves here to %s", shard.Resolved.Text(), base.Text()), nil
	}
	if !slices.EqualFunc(others, shard.CellPlacements, func(a, b results.CellPlacement) bool {
		return a.Cell == b.Cell && a.PlacementResolved == b.PlacementResolved && a.LoadgenLoops == b.LoadgenLoops
	}) {
		return "its cells were placed otherwise than they resolve to here", nil
	}
	return "", nil
}

// cpusFlag is a recorded placement (lab.Placement.String) as the --cpus
// flag takes it: "none" when neither side is pinned.
func cpusFlag(placement string) string {
	if placement == lab.Unpinned.String() {
		return "none"
	}
	return placement
}

// labFlag is a recorded lab mode (lab.Mode) as the --lab flag takes
// it: auto, on (the lab) or off (loopback).
func labFlag(mode string) string {
	switch lab.Mode(mode) {
	case lab.ModeLab:
		return "on"
	case lab.ModeLoopback:
		return "off"
	}
	return mode
}

// sameCells reports whether the manifest's cells are the spec's.
func sameCells(recorded []results.CellInfo, cells []Cell) bool {
	return slices.EqualFunc(recorded, cells, func(r results.CellInfo, c Cell) bool {
		info := c.Info()
		return r.ID == info.ID && r.Factor == info.Factor && r.Value == info.Value && r.Label == info.Label && maps.Equal(r.Config, info.Config)
	})
}

// lockDir takes an exclusive lock on the directory dir (flock(2), not
// waiting) and returns its release. The lock goes with the process: a
// matrix killed even with SIGKILL leaves none.
func lockDir(dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", &fs.PathError{Op: "open", Path: dir, Err: err})
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s: another matrix is writing into it", ErrDirBusy, dir)
		}
		return nil, fmt.Errorf("matrix: lock %s: %w", dir, os.NewSyscallError("flock", err))
	}
	return func() { unix.Close(fd) }, nil
}
