//go:build linux

package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/target"
)

// Options say how to run a spec.
type Options struct {
	Spec *Spec
	// Source and Text are recorded in the manifest: where the spec came
	// from ("embedded:quick", a file name) and its YAML.
	Source, Text string
	// Dir is the run directory. It is created; if it exists it must be
	// empty, so no earlier result is ever overwritten (unless Resume).
	Dir   string
	Shard Shard
	// Placement, Mode and Grace are as in harness.CellSpec, for every run
	// (Placement for every cell whose spec has no cpus field of its own).
	Placement lab.Placement
	Mode      lab.Mode
	Grace     time.Duration
	// StartTimeout bounds each run's wait for its server to accept
	// (harness.CellSpec.StartTimeout) and CheckStarts' wait for each
	// black-box command; 0 is harness.DefaultStartTimeout.
	StartTimeout time.Duration
	// DefaultPlacement says Placement is the default placement
	// (lab.DefaultPlacement),
	// not one asked for: the manifest records the default's rule beside
	// what it resolved to.
	DefaultPlacement bool
	// Resume continues the run in Dir, which an interrupted Run of the
	// same spec, shard, placement and build left (CheckResume says what
	// it keeps), instead of starting one in a new or empty Dir.
	Resume bool
	// Log, if not nil, receives one line as each run starts and ends.
	Log io.Writer
	// RunCell runs one cell; nil means harness.RunCell. Tests put a
	// deterministic fake here to check planning, recording and merging.
	RunCell func(ctx context.Context, cell harness.CellSpec) (*harness.CellResult, error)
}

// ErrCell is wrapped when a planned run's cell is one the harness would
// refuse (harness.CellSpec.Validate: the placement, the grace, or a value the
// server or the load generator would reject).
var ErrCell = errors.New("matrix: cell refused")

// Run runs shard Options.Shard of the spec into Options.Dir: each planned
// run through the harness, the manifest rewritten after every run (so an
// interrupted matrix leaves a consistent, readable directory), and returns
// the manifest. Before anything is written, every planned run's cell is
// checked as the harness would (ErrCell) and its target's program too
// (CheckTargets), and the directory is locked, so that two matrices never
// write into one (ErrDirBusy). When ctx is cancelled the run in progress
// comes back invalid, no further run starts, and the shard is marked
// interrupted; the manifest is still returned with the error. A run that
// fails to start (the harness refused the cell or the lab) stops the
// matrix with an error. With Options.Resume, the runs CheckResume keeps
// stay as they are and the plan continues after them. The reports are not
// written here: see Render.
func Run(ctx context.Context, opt Options) (*results.Manifest, error) {
	if opt.Spec == nil {
		return nil, errors.New("matrix: no spec")
	}
	sh := opt.Shard.orAll()
	plan := opt.Spec.Plan(sh)
	if err := opt.Spec.CheckTargets(sh); err != nil {
		return nil, err
	}
	cells, err := harnessCells(plan, opt)
	if err != nil {
		return nil, err
	}
	m, first, unlock, err := openRunDir(opt, sh, plan, cells)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r := &shardRun{opt: opt, sh: sh, plan: plan, cells: cells, m: m, runCell: opt.RunCell}
	if r.runCell == nil {
		r.runCell = func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error) {
			return harness.RunCell(ctx, c, nil)
		}
	}
	r.announce(first)
	if err := results.WriteManifest(opt.Dir, m); err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return r.runFrom(ctx, first)
}

// openRunDir prepares opt.Dir, locks it (unlock releases the lock) and
// returns its manifest: a new one (its placements resolved from cells,
// the harness's cells of plan), or, resuming, the one recorded, with
// first the index in plan of the first run still to run. On an error
// nothing is locked.
func openRunDir(opt Options, sh Shard, plan []PlannedRun, cells []harness.CellSpec) (m *results.Manifest, first int, unlock func(), err error) {
	if !opt.Resume {
		m, err := newManifest(opt, sh, plan, cells)
		if err != nil {
			return nil, 0, nil, err
		}
		if err := prepareDir(opt.Dir); err != nil {
			return nil, 0, nil, err
		}
		if unlock, err = lockDir(opt.Dir); err != nil {
			return nil, 0, nil, err
		}
		return m, 0, unlock, nil
	}
	// Checked before the lock (a directory that is no run is refused
	// as such), then read again under it.
	if _, _, err := resumeManifest(opt, plan); err != nil {
		return nil, 0, nil, err
	}
	if unlock, err = lockDir(opt.Dir); err != nil {
		return nil, 0, nil, err
	}
	var r Resumption
	if m, r, err = resumeManifest(opt, plan); err != nil {
		unlock()
		return nil, 0, nil, err
	}
	first = r.Kept
	// What a dropped or unrecorded run left is not part of the
	// record: its directory is made again from nothing.
	for _, p := range plan[first:] {
		if err := os.RemoveAll(filepath.Join(opt.Dir, p.Dir)); err != nil {
			unlock()
			return nil, 0, nil, fmt.Errorf("matrix: %w", err)
		}
	}
	return m, first, unlock, nil
}

// shardRun is one Run in progress: the plan of its shard, the harness's
// cell of each planned run and the manifest being written.
type shardRun struct {
	opt     Options
	sh      Shard
	plan    []PlannedRun
	cells   []harness.CellSpec
	m       *results.Manifest
	runCell func(ctx context.Context, cell harness.CellSpec) (*harness.CellResult, error)
}

// logf writes a line to Options.Log, if there is one.
func (r *shardRun) logf(format string, args ...any) {
	if r.opt.Log != nil {
		fmt.Fprintf(r.opt.Log, format, args...)
	}
}

// announce logs what the run will do, from plan[first] on.
func (r *shardRun) announce(first int) {
	opt, plan := r.opt, r.plan
	if opt.Resume {
		r.logf("matrix %s, shard %s: resuming: %d of %s kept, %d to run, about %s\n",
			opt.Spec.Name, r.sh, first, figure.Counted(len(plan), "run", "runs"), len(plan)-first, fmtEstimate(estimate(plan[first:])))
	} else {
		r.logf("matrix %s, shard %s: %s of %s × %s, about %s\n",
			opt.Spec.Name, r.sh, figure.Counted(len(plan), "run", "runs"), figure.Counted(len(r.m.Shards[0].Cells)+1, "cell", "cells"),
			figure.Counted(opt.Spec.Repeats, "repeat", "repeats"), fmtEstimate(estimate(plan)))
	}
}

// finish marks the shard finished and writes the manifest; it returns the
// manifest and err, or the write's error if err is nil.
func (r *shardRun) finish(err error) (*results.Manifest, error) {
	r.m.Shards[0].Finished = time.Now().UTC()
	if werr := results.WriteManifest(r.opt.Dir, r.m); werr != nil && err == nil {
		err = fmt.Errorf("matrix: %w", werr)
	}
	return r.m, err
}

// runFrom runs the plan from plan[first] on, recording each run in the
// manifest as it ends, until the plan's end, an interruption or a run
// that fails to start.
func (r *shardRun) runFrom(ctx context.Context, first int) (*results.Manifest, error) {
	plan, shard := r.plan, &r.m.Shards[0]
	for i := first; i < len(plan); i++ {
		p := plan[i]
		if ctx.Err() != nil {
			shard.Interrupted = true
			return r.finish(fmt.Errorf("matrix: interrupted before run %d of %d: %w", i+1, len(plan), context.Cause(ctx)))
		}
		r.logf("[%d/%d] %s repeat %d%s ...\n", i+1, len(plan), p.Cell.ID, p.Repeat, pairText(p))
		started := time.Now()
		res, err := r.runCell(ctx, r.cells[i])
		if res == nil {
			if err == nil {
				err = errors.New("no result")
			}
			shard.Interrupted = ctx.Err() != nil
			return r.finish(fmt.Errorf("matrix: %s repeat %d: %w", p.Cell.ID, p.Repeat, err))
		}
		rec := runRecord(res, p, r.sh, i+1, started, r.opt.Dir)
		r.m.Runs = append(r.m.Runs, rec)
		r.logf("[%d/%d] %s repeat %d: %s in %.1f s\n", i+1, len(plan), p.Cell.ID, p.Repeat, verdictText(rec), rec.ElapsedS)
		if err := results.WriteManifest(r.opt.Dir, r.m); err != nil {
			return r.finish(fmt.Errorf("matrix: %w", err))
		}
		if ctx.Err() != nil {
			shard.Interrupted = true
			return r.finish(fmt.Errorf("matrix: interrupted during run %d of %d: %w", i+1, len(plan), context.Cause(ctx)))
		}
	}
	return r.finish(nil)
}

// newManifest is the manifest of a new run of opt's spec, before its
// first run: cells are the harness's cells of plan, whose placements it
// records as resolved here (placements).
func newManifest(opt Options, sh Shard, plan []PlannedRun, cells []harness.CellSpec) (*results.Manifest, error) {
	base, others, err := placements(plan, cells, opt)
	if err != nil {
		return nil, err
	}
	m := &results.Manifest{
		Format: results.ManifestFormat,
		Tool:   ToolInfo(),
		Spec:   results.SpecInfo{Name: opt.Spec.Name, Source: opt.Source, Text: opt.Text, Repeats: opt.Spec.Repeats},
		Shards: []results.ShardInfo{{
			Index: sh.Index, Count: sh.Count, Cells: opt.Spec.ShardCells(sh), Machine: MachineInfo(),
			Placement: opt.Placement.String(), Mode: string(orMode(opt.Mode)), Resolved: base, CellPlacements: others,
			Started: time.Now().UTC(),
		}},
	}
	for _, c := range opt.Spec.Expand() {
		m.Cells = append(m.Cells, c.Info())
	}
	return m, nil
}

// placements resolves the placement and the load generator's loops of
// each cell of plan (cells: the harness's cells of its runs) as the
// harness will (harness.CellSpec.Place): the baseline's, and each other
// cell's where it differs from the baseline's, in plan order. A default
// is recorded with its rule: the placement's when opt.DefaultPlacement and
// the cell has no cpus field, the loops' when the cell gives none.
func placements(plan []PlannedRun, cells []harness.CellSpec, opt Options) (base results.Resolved, others []results.CellPlacement, err error) {
	seen := map[string]bool{}
	for i, p := range plan {
		if seen[p.Cell.ID] {
			continue
		}
		seen[p.Cell.ID] = true
		placed, err := cells[i].Place()
		if err != nil {
			return base, nil, &cellError{cell: p.Cell.ID, err: err}
		}
		r := results.Resolved{PlacementResolved: placed.Placement.String(), LoadgenLoops: placed.Load.Loops}
		if opt.DefaultPlacement && p.Cell.Placement == "" {
			r.PlacementDefault = "default: " + lab.DefaultPlacementRule
		}
		if cells[i].Load.Loops == 0 {
			r.LoadgenLoopsDefault = "default: " + harness.DefaultLoadLoopsRule
		}
		switch {
		case p.Cell.ID == BaselineID:
			base = r
		case r != base:
			others = append(others, results.CellPlacement{Cell: p.Cell.ID, Resolved: r})
		}
	}
	return base, others, nil
}

// harnessCells are the harness's cells of the plan's runs, each checked as
// the harness will check it (harness.CellSpec.Validate), so that a value the
// server or the load generator would reject, or a placement the lab would,
// is refused before anything is written or started.
func harnessCells(plan []PlannedRun, opt Options) ([]harness.CellSpec, error) {
	out := make([]harness.CellSpec, len(plan))
	for i, p := range plan {
		hc, err := harnessCell(p, opt)
		if err != nil {
			return nil, err
		}
		if err := hc.Validate(); err != nil {
			return nil, &cellError{cell: p.Cell.ID, err: err}
		}
		out[i] = hc
	}
	return out, nil
}

// cellError is a planned run's cell the harness refuses, in its words.
type cellError struct {
	cell string
	err  error
}

func (e *cellError) Error() string {
	return "cell " + e.cell + ": " + strings.TrimPrefix(e.err.Error(), "cell: ")
}

func (e *cellError) Unwrap() []error { return []error{ErrCell, e.err} }

// ErrTarget is wrapped when a black-box target's program is not there.
var ErrTarget = errors.New("matrix: target command")

// PeersDir is where the README's build line puts the servers of
// examples/peers, relative to the repository's top directory, and
// PeersBuild is that line.
const (
	PeersDir   = "reactorlab-peers"
	PeersBuild = "(cd examples/peers && go build -o ../../reactorlab-peers/ ./gnet ./netpoll ./stdlib)"
)

// targetError is a target program found missing: where the spec names
// it, and why it cannot run.
type targetError struct {
	at      position
	program string
	why     string
}

func (e *targetError) Error() string {
	msg := fmt.Sprintf("line %d: %s: %s: %s", e.at.line, e.at.field, e.program, e.why)
	if underPeers(e.program) {
		msg += "; the peers of examples/peers are not built: from the repository's top directory (where the matrix must run), build them with " + PeersBuild
	}
	return msg
}

func (e *targetError) Unwrap() []error { return []error{ErrTarget, ErrSpec} }

// underPeers reports whether program is a path in PeersDir.
func underPeers(program string) bool {
	dir, _ := path.Split(path.Clean(program))
	return path.Base(path.Clean(dir)) == PeersDir
}

// CheckTargets refuses, before anything runs, shard sh of s when a
// black-box command's program is not an executable file, found as given
// (a path) or on $PATH: the same check as reactorlab run's
// (harness.CheckCommand), so that a peer not built yet, or a program not
// installed, does not make every one of its runs invalid, one by one. The
// error names the line and field of the spec that gives the command (and,
// for a program under PeersDir, how to build the peers) and wraps
// ErrTarget and ErrSpec. A compound command (a pipe, "cd x && ...", a
// redirection: see harness.ShellArgv) is left to the shell, as
// harness.CheckCommand leaves it. Run calls it; a suite's runner calls it
// for every spec first.
func (s *Spec) CheckTargets(sh Shard) error {
	seen := map[string]bool{}
	for _, p := range s.Plan(sh) {
		cmd := p.Cell.Target.Command()
		if cmd == "" || seen[cmd] {
			continue
		}
		seen[cmd] = true
		if err := harness.CheckCommand(cmd); err != nil {
			prog := strings.Fields(cmd)[0]
			return &targetError{at: p.Cell.at, program: prog, why: missingWhy(prog, err)}
		}
	}
	return nil
}

// missingWhy says why prog, which harness.CheckCommand refused with err,
// cannot run: for a path, what is there instead of an executable file;
// else err's words less the "exec: \"prog\": " os/exec puts before them
// ("executable file not found in $PATH").
func missingWhy(prog string, err error) string {
	if strings.Contains(prog, "/") {
		st, serr := os.Stat(prog)
		var pe *fs.PathError
		switch {
		case errors.As(serr, &pe):
			return pe.Err.Error()
		case serr == nil && st.IsDir():
			return "a directory, not an executable file"
		case serr == nil && st.Mode()&0o111 == 0:
			return "not executable (no x permission)"
		}
	}
	why := err.Error()
	var sf *target.StartError
	if errors.As(err, &sf) {
		why = sf.Detail
	}
	return strings.TrimPrefix(why, "exec: "+strconv.Quote(prog)+": ")
}

func orMode(m lab.Mode) lab.Mode {
	if m == "" {
		return lab.ModeAuto
	}
	return m
}

func pairText(p PlannedRun) string {
	if p.Cell.Factor == "" && p.Pair != "" {
		return " (paired with " + p.Pair + ")"
	}
	return ""
}

func verdictText(r results.RunRecord) string {
	if r.Valid && len(r.Contended) > 0 {
		return fmt.Sprintf("valid, %.0f frames/s, but CONTENDED (left out of the analysis): %s", r.Metrics[results.MetricThroughput], r.Contended[0])
	}
	if r.Valid {
		return fmt.Sprintf("valid, %.0f frames/s", r.Metrics[results.MetricThroughput])
	}
	why := "invalid"
	if len(r.Invalid) > 0 {
		why += ": " + r.Invalid[0]
	}
	return why
}

// harnessCell turns a planned run into the harness's cell.
func harnessCell(p PlannedRun, opt Options) (harness.CellSpec, error) {
	rc, lc, err := p.Cell.Configs()
	if err != nil {
		return harness.CellSpec{}, fmt.Errorf("matrix: cell %s: %w", p.Cell.ID, err)
	}
	cpus := opt.Placement
	if p.Cell.Placement != "" {
		if cpus, err = lab.ParsePlacement(p.Cell.Placement); err != nil { // accepted when the spec was read
			return harness.CellSpec{}, fmt.Errorf("matrix: cell %s: %w", p.Cell.ID, err)
		}
	}
	return harness.CellSpec{
		Target: p.Cell.Target, Config: rc, Load: lc,
		Placement: cpus, Mode: opt.Mode, Grace: opt.Grace, StartTimeout: opt.StartTimeout, ServerCPU: p.Cell.ServerCPU, Dir: filepath.Join(opt.Dir, p.Dir),
	}, nil
}

// runRecord makes the manifest's record of one run.
func runRecord(res *harness.CellResult, p PlannedRun, sh Shard, seq int, started time.Time, dir string) results.RunRecord {
	rec := results.RunRecord{
		Shard: sh.Index, Seq: seq, Cell: p.Cell.ID, Repeat: p.Repeat, Pair: p.Pair, Dir: p.Dir,
		Started: started.UTC(), ElapsedS: time.Since(started).Seconds(),
		Valid: res.Valid, Invalid: res.Invalid,
	}
	if res.Lab != nil {
		rec.Mode = string(res.Lab.Mode)
	}
	if res.CPUBusy != nil {
		rec.Contended = res.CPUBusy.Contended
	}
	if res.Load != nil {
		for _, g := range res.Load.SelfCheck.FailedGates() {
			rec.Flagged = append(rec.Flagged, g.String())
			if k := g.IntervalThinning(); k != 0 {
				if rec.Thinning == nil {
					rec.Thinning = map[string]int{}
				}
				rec.Thinning[g.Histogram] = k
			}
		}
	}
	if res.Load != nil {
		rec.MeasuredFrom = res.Load.Latency.StartTime.Add(time.Duration(res.Load.Latency.WarmupS * float64(time.Second)))
	}
	var err error
	rec.Metrics, err = results.ComputeMetrics(res, filepath.Join(dir, p.Dir, results.RunHlogFile), rec.MeasuredFrom)
	if err != nil {
		rec.Valid = false
		rec.Invalid = append(rec.Invalid, "metrics: "+err.Error())
	}
	return rec
}

// Check refuses what Run would refuse of opt before it writes anything,
// the run directory aside: a target program that is not there
// (CheckTargets: ErrTarget, at the spec's line and field) and a cell the
// harness would refuse (ErrCell: a placement the lab rejects, or a value
// the server or the load generator would, in its words). A suite's runner
// calls it for every spec before the first runs.
func Check(opt Options) error {
	if opt.Spec == nil {
		return errors.New("matrix: no spec")
	}
	sh := opt.Shard.orAll()
	if err := opt.Spec.CheckTargets(sh); err != nil {
		return err
	}
	_, err := harnessCells(opt.Spec.Plan(sh), opt)
	return err
}
