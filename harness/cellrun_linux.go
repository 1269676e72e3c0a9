//go:build linux

package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// RunCell runs one cell in the lab (or on loopback, as CellSpec.Mode allows)
// and writes its files into CellSpec.Dir: the load generator's configuration,
// its HDR interval log and summary, the progress lines, summary.json and
// summary.txt. progress, if not nil, is called with each progress report
// of the load generator while it runs (about once per Load.Interval). The
// run is bounded by the load's own bound plus the lab's reserves. An error
// with a nil result means nothing was started (a refused cell or lab
// spec); a run that was started always comes back, and is written, with
// Valid false and the reasons if it is not trustworthy (interrupted,
// failed midway, anything lost). A server that could not be started
// comes back so too, with an error wrapping the *target.StartError (also in
// the result's Lab.StartFailure): nothing was measured.
func RunCell(ctx context.Context, cell CellSpec, progress func(loadgen.Progress)) (*CellResult, error) {
	cell, spec, err := cell.prepare()
	if err != nil {
		return nil, err
	}
	labRes, runErr := runTailing(ctx, spec, filepath.Join(cell.Dir, CellProgressFile), progress)
	if labRes == nil {
		return nil, fmt.Errorf("cell: %w", runErr)
	}
	if labRes.StartFailure != nil {
		labRes.StartFailure.Target = cell.Target.String()
	}
	// A run that failed midway (interrupted, a process that would not
	// start) still has a record, with the error among its reasons: it is
	// written and summarised like any other, as invalid.
	res := newCellResult(cell, labRes)
	if err := res.writeFiles(); err != nil {
		return res, fmt.Errorf("cell: %w", err)
	}
	if labRes.StartFailure != nil {
		return res, fmt.Errorf("cell: %w", labRes.StartFailure)
	}
	return res, nil
}

// prepare validates the cell, makes its directory absolute and creates it,
// records its serve flags, writes the load generator's configuration and
// removes a stale progress file; it returns the cell so completed and its
// lab run. Nothing is started.
func (cell CellSpec) prepare() (CellSpec, lab.Spec, error) {
	if err := cell.Validate(); err != nil {
		return cell, lab.Spec{}, err
	}
	dir, err := filepath.Abs(cell.Dir)
	if err != nil {
		return cell, lab.Spec{}, fmt.Errorf("cell: directory %q: %w", cell.Dir, err)
	}
	cell.Dir = dir
	if cell.Target.IsDesign() {
		// The flags as given, before the placement adds --loop-cpus:
		// the lab's record of the server's argv keeps that one.
		cell.ServeArgs = cell.serveArgs()
	}
	if cell, err = cell.Place(); err != nil {
		return cell, lab.Spec{}, fmt.Errorf("cell: %w", err)
	}
	spec, load := cell.labSpec()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cell, lab.Spec{}, fmt.Errorf("cell: %w", err)
	}
	enc, err := json.MarshalIndent(load, "", "  ")
	if err != nil {
		return cell, lab.Spec{}, fmt.Errorf("cell: load configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CellLoadConfigFile), append(enc, '\n'), 0o644); err != nil {
		return cell, lab.Spec{}, fmt.Errorf("cell: %w", err)
	}
	// A stale progress file from an earlier run in the same directory must
	// not be read as this run's.
	if err := os.Remove(filepath.Join(dir, CellProgressFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return cell, lab.Spec{}, fmt.Errorf("cell: %w", err)
	}
	return cell, spec, nil
}

// runTailing runs the lab spec while passing each line of the progress
// file at progressPath to progress (see tailProgress), and stops following
// the file once the run is over.
func runTailing(ctx context.Context, spec lab.Spec, progressPath string, progress func(loadgen.Progress)) (*lab.Result, error) {
	tailDone := make(chan struct{})
	tailStop := make(chan struct{})
	go func() {
		defer close(tailDone)
		tailProgress(progressPath, progress, tailStop)
	}()
	res, err := lab.Run(ctx, spec)
	close(tailStop)
	<-tailDone
	return res, err
}

// newCellResult is the cell's result from the lab's record: the lab's
// reasons, the load generator's summary and the reference reactor's final
// statistics (each read from the last line its process printed), and the
// verdict.
func newCellResult(cell CellSpec, labRes *lab.Result) *CellResult {
	res := &CellResult{Cell: cell, Lab: labRes}
	res.Invalid = append(res.Invalid, labRes.Invalid...)
	res.readLoad()
	if cell.Target.IsDesign() {
		res.readServer()
	}
	res.checkPlacement()
	res.measureBusy()
	res.measureLoopTimes()
	res.Valid = len(res.Invalid) == 0
	return res
}

// readLoad reads the load generator's summary from its stdout, adding its
// reasons to Invalid, or why there is none.
func (res *CellResult) readLoad() {
	labRes := res.Lab
	if labRes.Client == nil || len(labRes.Client.Stdout) == 0 {
		res.Invalid = append(res.Invalid, "load generator: no summary")
		return
	}
	var s loadgen.Summary
	if err := json.Unmarshal(lastLine(labRes.Client.Stdout), &s); err != nil {
		res.Invalid = append(res.Invalid, fmt.Sprintf("load generator: unreadable summary: %v", err))
		return
	}
	res.Load = &s
	for _, why := range s.Invalid {
		res.Invalid = append(res.Invalid, "load: "+why)
	}
	if s.Interrupted {
		res.Invalid = append(res.Invalid, "load: interrupted")
	}
}

// readServer reads a reference reactor's final statistics from its stdout,
// adding its error to Invalid, or why there are none.
func (res *CellResult) readServer() {
	labRes := res.Lab
	if labRes.Server != nil && len(labRes.Server.Stdout) > 0 {
		var out roles.ServeOutput
		if err := json.Unmarshal(lastLine(labRes.Server.Stdout), &out); err != nil {
			res.Invalid = append(res.Invalid, fmt.Sprintf("server: unreadable final statistics: %v", err))
		} else {
			res.Server = &out
			if out.Error != "" {
				res.Invalid = append(res.Invalid, "server: "+out.Error)
			}
		}
	}
	if res.Server == nil {
		res.Invalid = append(res.Invalid, "server: no final statistics from the reactor")
	}
}

// writeFiles writes summary.json and summary.txt into the cell's
// directory.
func (res *CellResult) writeFiles() error {
	dir := res.Cell.Dir
	if err := writeJSONFile(filepath.Join(dir, CellSummaryFile), res); err != nil {
		return err
	}
	var text bytes.Buffer
	if err := res.WriteSummary(&text, false); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, CellReportFile), text.Bytes(), 0o644)
}

// serveArgs are the serve flags that turn the default configuration into
// the cell's (addresses aside).
func (cell CellSpec) serveArgs() []string {
	cfg := cell.Config
	cfg.Listen, cfg.ControlListen = reactors.DefaultConfig().Listen, reactors.DefaultConfig().ControlListen
	return cfg.Args()
}

// serveConfig is the configuration the serve role gets: the cell's, with
// both addresses, which the harness sets (any well-formed ones: the real
// ones exist only once the lab does).
func (cell CellSpec) serveConfig() reactors.Config {
	cfg := cell.Config
	cfg.Listen, cfg.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

// startTimeout is the cell's start timeout, its default applied.
func (cell CellSpec) startTimeout() time.Duration {
	if cell.StartTimeout <= 0 {
		return DefaultStartTimeout
	}
	return cell.StartTimeout
}

// labSpec is the lab run of the cell, with its files under cell.Dir, and
// the load generator's configuration as the loadgen role will read it.
func (cell CellSpec) labSpec() (lab.Spec, loadgen.Config) {
	load := cell.Load
	load.DataAddr, load.ControlAddr = "{addr}", "{control}"
	load.Progress = nil
	spec := lab.Spec{Placement: cell.Placement, Mode: cell.Mode, Grace: cell.Grace, ServerCPU: cell.ServerCPU, Ready: cell.startTimeout(),
		Interrupt: cell.Interrupt}
	if cell.Target.IsDesign() {
		argv := append([]string{lab.RolePrefix + roles.Serve, "--reactor=" + cell.Target.Design()}, cell.serveArgs()...)
		argv = append(argv, "--listen={addr}", "--control-listen={control}", "--lifetime="+(cell.startTimeout()+loadBound(load)+time.Minute).String())
		spec.Server = lab.Proc{Argv: argv, PinsLoops: len(cell.Config.LoopCPUs) > 0}
		spec.Control = true
		// A reference reactor obeys the STOP probe and exits by itself.
		spec.ServerMayExit = load.StopAt > 0
	} else {
		spec.Server = lab.Proc{Argv: ShellArgv(cell.Target.Command())}
		if strings.Contains(cell.Target.Command(), lab.ControlPlaceholder) {
			// It serves a control address of its own: the lab gives it one,
			// waits for it, and the load generator's control class goes there.
			spec.Control = true
			spec.Server.Env = []string{proc.ControlListenEnv + "=" + lab.ControlPlaceholder}
		}
	}
	argv := []string{lab.RolePrefix + roles.Loadgen, "--config=" + filepath.Join(cell.Dir, CellLoadConfigFile),
		"--data={addr}", "--control={control}", "--out=" + cell.Dir, "--progress=" + filepath.Join(cell.Dir, CellProgressFile)}
	if load.Loops > 0 {
		argv = append(argv, "--loops="+strconv.Itoa(load.Loops))
	}
	if len(load.LoopCPUs) > 0 {
		argv = append(argv, "--loop-cpus="+reactors.FormatCPUList(load.LoopCPUs))
	}
	spec.Client = lab.Proc{Argv: argv, PinsLoops: len(load.LoopCPUs) > 0}
	// The client's time: its own bound plus the server's start and a
	// margin for starting it; the lab's reserves for stopping and auditing
	// come on top.
	grace := spec.Grace
	if grace == 0 {
		grace = lab.DefaultGrace
	}
	spec.Timeout = lab.MinTimeout(grace) + spec.Ready + loadBound(load) + 10*time.Second
	return spec, load
}

// loadBound is the longest a load generator with cfg runs: its own bound
// (a hot lead included) and a second for closing.
func loadBound(cfg loadgen.Config) time.Duration {
	return cfg.MaxDuration() + time.Second
}

// lastLine is the last non-empty line of b: a role's summary follows
// whatever else it printed.
func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

func writeJSONFile(path string, v any) error {
	enc, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, append(enc, '\n'), 0o644)
}

// tailProgress follows the progress file, passing each new complete line to
// progress, until stop is closed (then reads what is left). It polls: the
// file is written by a process in another namespace, and a progress line
// is for a person, so a quarter second late is fine.
func tailProgress(path string, progress func(loadgen.Progress), stop <-chan struct{}) {
	if progress == nil {
		return
	}
	var off int64
	read := func() {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return
		}
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return // an incomplete line is read again next time
			}
			off += int64(len(line))
			var p loadgen.Progress
			if json.Unmarshal(line, &p) == nil {
				progress(p)
			}
		}
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			read()
			return
		case <-tick.C:
			read()
		}
	}
}
