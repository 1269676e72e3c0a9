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
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results"
)

// The roles a cell's processes play: the reference reactor and the load
// generator, both this program.
const (
	serveRole   = "serve"
	loadgenRole = "loadgen"
)

func init() {
	RegisterRole(serveRole, func(args []string) int { return ServeMain(args, os.Stdout, os.Stderr) })
	RegisterRole(loadgenRole, func(args []string) int { return LoadgenMain(args, os.Stdout, os.Stderr) })
}

// The files a cell writes into its directory.
const (
	// CellLoadConfigFile is the load generator's configuration, as handed to
	// the loadgen role.
	CellLoadConfigFile = "loadgen-config.json"
	// CellProgressFile receives one JSON line per progress report of the
	// load generator while it runs.
	CellProgressFile = "progress.jsonl"
	// CellSummaryFile is the whole CellResult as JSON.
	CellSummaryFile = "summary.json"
	// CellReportFile is the text summary WriteSummary prints.
	CellReportFile = "summary.txt"
	// The load generator writes loadgen.hlog and loadgen.json itself
	// (loadgen.Result.WriteFiles).
)

// CellFiles are the files a cell may write into its directory; a directory
// holding any of them holds a run (CheckCellDir).
var CellFiles = []string{CellSummaryFile, CellReportFile, CellLoadConfigFile, CellProgressFile, loadgen.HlogFile, loadgen.SummaryFile}

// ErrCellDirInUse is wrapped by CheckCellDir's refusal of a directory that
// already holds a run.
var ErrCellDirInUse = errors.New("holds a run already")

// CheckCellDir refuses a directory that already holds a run: one of
// CellFiles is there (the error, wrapping ErrCellDirInUse, names the
// first found). It refuses too a dir that is not a directory, or whose
// nearest existing parent is not one, so that the run could not create
// it: the error wraps syscall.ENOTDIR ("DIR: not a directory", or "DIR:
// PARENT is not a directory"). A directory that does not exist, or holds
// none of them, is accepted; so is one that cannot be read, whose error is
// left for the run to meet when it writes.
func CheckCellDir(dir string) error {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			switch {
			case st.IsDir():
			case d == filepath.Clean(dir):
				return fmt.Errorf("%s: %w", dir, syscall.ENOTDIR)
			default:
				return fmt.Errorf("%s: %s is %w", dir, d, syscall.ENOTDIR)
			}
			break
		}
		// Missing, or below a file (ENOTDIR): look further up. Any other
		// error (unreadable) is left for the run.
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || d == filepath.Dir(d) {
			break
		}
	}
	for _, name := range CellFiles {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%s %w: %s is there (choose another directory, or remove it)", dir, ErrCellDirInUse, filepath.Join(dir, name))
		}
	}
	return nil
}

// DefaultStartTimeout is the default of Cell.StartTimeout.
const DefaultStartTimeout = proc.DefaultReady

// MaxStartTimeout bounds Cell.StartTimeout.
const MaxStartTimeout = 10 * time.Minute

// Cell is one measured cell: a target under one load, placed. Exactly one
// of Reactor and Target is set.
type Cell struct {
	// Reactor is a reference reactor, run as the "serve" role with Config
	// (whose Listen and ControlListen the harness sets).
	Reactor reactors.Design `json:"reactor,omitempty"`
	Config  reactors.Config `json:"-"`
	// ServeArgs are the serve flags that turn the default configuration
	// into Config, recorded for the reader (filled in by RunCell).
	ServeArgs []string `json:"serve_args,omitempty"`
	// Target is a black-box server command, run by /bin/sh -c in the
	// server's place with REACTORLAB_LISTEN=host:port and every {addr}
	// replaced; it serves data and control on one address.
	Target string `json:"target,omitempty"`
	// Load is the load; its addresses are set by the harness.
	Load loadgen.Config `json:"load"`
	// CPUs, Mode and Grace are as in LabSpec.
	CPUs  CPUs          `json:"cpus"`
	Mode  Mode          `json:"mode"`
	Grace time.Duration `json:"-"` // JSON: "grace_s", seconds
	// ServerCPU caps the server's CPU time, in CPUs (LabSpec.ServerCPU);
	// 0 leaves it unlimited.
	ServerCPU float64 `json:"server_cpu,omitempty"`
	// StartTimeout bounds the wait for the server to accept on its
	// addresses (LabSpec.Ready; 0: DefaultStartTimeout, at most
	// MaxStartTimeout). A server that does not is a StartFailure.
	StartTimeout time.Duration `json:"-"` // JSON: "start_timeout_s", seconds
	// Interrupt, when closed, winds the run down (LabSpec.Interrupt): the
	// load generator stops and reports what it measured, and RunCell
	// returns the result, invalid, as "interrupted". Nil never does.
	Interrupt <-chan struct{} `json:"-"`
	// Dir is the directory the cell's files go to; it is created if
	// missing, and must be writable by the lab (the same file system).
	Dir string `json:"dir"`
}

type plainCell Cell

// cellJSON is Cell's JSON: Grace in seconds, as LabSpec's durations.
type cellJSON struct {
	*plainCell
	Grace        secs `json:"grace_s,omitempty"`
	StartTimeout secs `json:"start_timeout_s,omitempty"`
}

// MarshalJSON writes the cell with Grace and StartTimeout in seconds
// ("grace_s", "start_timeout_s").
func (c Cell) MarshalJSON() ([]byte, error) {
	return json.Marshal(cellJSON{plainCell: (*plainCell)(&c), Grace: secs(c.Grace), StartTimeout: secs(c.StartTimeout)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Cell) UnmarshalJSON(b []byte) error {
	j := cellJSON{plainCell: (*plainCell)(c)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	c.Grace, c.StartTimeout = time.Duration(j.Grace), time.Duration(j.StartTimeout)
	return nil
}

// CellResult is the outcome of one cell: the lab's record of both
// processes, the load generator's summary and, for a reference reactor, its
// final statistics.
type CellResult struct {
	Cell Cell `json:"cell"`
	// Lab is the run's record: mode, placement, CPU and memory per side,
	// audit.
	Lab *LabResult `json:"lab"`
	// Load is the load generator's summary (nil if it did not produce one).
	Load *loadgen.Summary `json:"load,omitempty"`
	// Server is a reference reactor's final output (nil for a black box or
	// if it printed none).
	Server *ServeOutput `json:"server,omitempty"`
	// Valid is true when Invalid is empty: the lab run and the measurement
	// were both valid. Invalid gathers the reasons of both.
	Valid   bool     `json:"valid"`
	Invalid []string `json:"invalid,omitempty"`
}

// RunCell runs one cell in the lab (or on loopback, as Cell.Mode allows)
// and writes its files into Cell.Dir: the load generator's configuration,
// its HDR interval log and summary, the progress lines, summary.json and
// summary.txt. progress, if not nil, is called with each progress report
// of the load generator while it runs (about once per Load.Interval). The
// run is bounded by the load's own bound plus the lab's reserves. An error
// with a nil result means nothing was started (a refused cell or lab
// spec); a run that was started always comes back, and is written, with
// Valid false and the reasons if it is not trustworthy (interrupted,
// failed midway, anything lost). A server that could not be started
// comes back so too, with an error wrapping the *StartFailure (also in
// the result's Lab.StartFailure): nothing was measured.
func RunCell(ctx context.Context, cell Cell, progress func(loadgen.Progress)) (*CellResult, error) {
	if err := cell.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cell.Dir)
	if err != nil {
		return nil, fmt.Errorf("cell: directory %q: %w", cell.Dir, err)
	}
	cell.Dir = dir
	spec, load := cell.labSpec()
	if cell.Reactor != "" {
		cell.ServeArgs = cell.serveArgs()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	enc, err := json.MarshalIndent(load, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cell: load configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CellLoadConfigFile), append(enc, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	// A stale progress file from an earlier run in the same directory must
	// not be read as this run's.
	progressPath := filepath.Join(dir, CellProgressFile)
	if err := os.Remove(progressPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cell: %w", err)
	}

	tailDone := make(chan struct{})
	tailStop := make(chan struct{})
	go func() {
		defer close(tailDone)
		tailProgress(progressPath, progress, tailStop)
	}()
	lab, runErr := Run(ctx, spec)
	close(tailStop)
	<-tailDone
	if lab == nil {
		return nil, fmt.Errorf("cell: %w", runErr)
	}
	if lab.StartFailure != nil {
		lab.StartFailure.Target = cell.Label()
	}
	// A run that failed midway (interrupted, a process that would not
	// start) still has a record, with the error among its reasons: it is
	// written and summarised like any other, as invalid.
	res := &CellResult{Cell: cell, Lab: lab}
	res.Invalid = append(res.Invalid, lab.Invalid...)
	if lab.Client != nil && len(lab.Client.Stdout) > 0 {
		var s loadgen.Summary
		if err := json.Unmarshal(lastLine(lab.Client.Stdout), &s); err != nil {
			res.Invalid = append(res.Invalid, fmt.Sprintf("load generator: unreadable summary: %v", err))
		} else {
			res.Load = &s
			for _, why := range s.Invalid {
				res.Invalid = append(res.Invalid, "load: "+why)
			}
			if s.Interrupted {
				res.Invalid = append(res.Invalid, "load: interrupted")
			}
		}
	} else {
		res.Invalid = append(res.Invalid, "load generator: no summary")
	}
	if cell.Reactor != "" && lab.Server != nil && len(lab.Server.Stdout) > 0 {
		var out ServeOutput
		if err := json.Unmarshal(lastLine(lab.Server.Stdout), &out); err != nil {
			res.Invalid = append(res.Invalid, fmt.Sprintf("server: unreadable final statistics: %v", err))
		} else {
			res.Server = &out
			if out.Error != "" {
				res.Invalid = append(res.Invalid, "server: "+out.Error)
			}
		}
	}
	if cell.Reactor != "" && res.Server == nil {
		res.Invalid = append(res.Invalid, "server: no final statistics from the reactor")
	}
	res.Valid = len(res.Invalid) == 0
	if err := writeJSONFile(filepath.Join(dir, CellSummaryFile), res); err != nil {
		return res, fmt.Errorf("cell: %w", err)
	}
	var text bytes.Buffer
	if err := res.WriteSummary(&text, false); err != nil {
		return res, fmt.Errorf("cell: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CellReportFile), text.Bytes(), 0o644); err != nil {
		return res, fmt.Errorf("cell: %w", err)
	}
	if lab.StartFailure != nil {
		return res, fmt.Errorf("cell: %w", lab.StartFailure)
	}
	return res, nil
}

// Validate checks the cell before anything is started: exactly one of a
// reference reactor and a target command, the reactor's configuration as
// the serve role would check it (CheckServe), the load as the loadgen
// role would (CheckLoad; its addresses aside: the harness sets them), the
// start timeout, and a directory. Errors name the field.
func (cell Cell) Validate() error {
	if (cell.Reactor == "") == (cell.Target == "") {
		return errors.New("cell: exactly one of a reference reactor and a target command")
	}
	if cell.Reactor != "" {
		if err := CheckServe(cell.Reactor, cell.serveConfig()); err != nil {
			return fmt.Errorf("cell: reactor %s: %w", cell.Reactor, err)
		}
	}
	load := cell.Load
	load.DataAddr, load.ControlAddr = "", "" // the harness sets them
	if err := CheckLoad(load); err != nil {
		return fmt.Errorf("cell: load: %w", err)
	}
	if cell.StartTimeout < 0 || cell.StartTimeout > MaxStartTimeout {
		return fmt.Errorf("cell: start timeout %v (accepted: (0, %v], 0 means %v)", cell.StartTimeout, MaxStartTimeout, DefaultStartTimeout)
	}
	if cell.Dir == "" {
		return errors.New("cell: no directory for its files")
	}
	// The lab's own checks (placement on CPUs this process may use, grace,
	// bounds), before anything is written or started.
	ls, _ := cell.labSpec()
	if _, err := ls.validate(); err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	if err := allowedCPUs(cell.CPUs); err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	return nil
}

// serveArgs are the serve flags that turn the default configuration into
// the cell's (addresses aside).
func (cell Cell) serveArgs() []string {
	cfg := cell.Config
	cfg.Listen, cfg.ControlListen = reactors.DefaultConfig().Listen, reactors.DefaultConfig().ControlListen
	return cfg.Args()
}

// Label names the cell's server as its user named it: the reference
// design ("lt"), or "cmd:" and the target command.
func (cell Cell) Label() string {
	if cell.Reactor != "" {
		return string(cell.Reactor)
	}
	return "cmd:" + cell.Target
}

// serveConfig is the configuration the serve role gets: the cell's, with
// both addresses, which the harness sets (any well-formed ones: the real
// ones exist only once the lab does).
func (cell Cell) serveConfig() reactors.Config {
	cfg := cell.Config
	cfg.Listen, cfg.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

// startTimeout is the cell's start timeout, its default applied.
func (cell Cell) startTimeout() time.Duration {
	if cell.StartTimeout <= 0 {
		return DefaultStartTimeout
	}
	return cell.StartTimeout
}

// labSpec is the lab run of the cell, with its files under cell.Dir, and
// the load generator's configuration as the loadgen role will read it.
func (cell Cell) labSpec() (LabSpec, loadgen.Config) {
	load := cell.Load
	load.DataAddr, load.ControlAddr = "{addr}", "{control}"
	load.Progress = nil
	spec := LabSpec{CPUs: cell.CPUs, Mode: cell.Mode, Grace: cell.Grace, ServerCPU: cell.ServerCPU, Ready: cell.startTimeout(),
		Interrupt: cell.Interrupt}
	if cell.Reactor != "" {
		argv := append([]string{RolePrefix + serveRole, "--reactor=" + string(cell.Reactor)}, cell.serveArgs()...)
		argv = append(argv, "--listen={addr}", "--control-listen={control}", "--lifetime="+(cell.startTimeout()+loadBound(load)+time.Minute).String())
		spec.Server = Proc{Argv: argv}
		spec.Control = true
		// A reference reactor obeys the STOP probe and exits by itself.
		spec.ServerMayExit = load.StopAt > 0
	} else {
		spec.Server = Proc{Argv: ShellArgv(cell.Target)}
	}
	spec.Client = Proc{Argv: []string{RolePrefix + loadgenRole, "--config=" + filepath.Join(cell.Dir, CellLoadConfigFile),
		"--data={addr}", "--control={control}", "--out=" + cell.Dir, "--progress=" + filepath.Join(cell.Dir, CellProgressFile)}}
	// The client's time: its own bound plus the server's start and a
	// margin for starting it; the lab's reserves for stopping and auditing
	// come on top.
	grace := spec.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	spec.Timeout = minTimeout(grace) + spec.Ready + loadBound(load) + 10*time.Second
	return spec, load
}

// ShellArgv is how a black-box command runs: /bin/sh -c COMMAND, with
// "exec " put before a simple command (no shell operator, redirection,
// substitution, quoting, glob or leading assignment; the harness's {addr}
// placeholders are plain words to the shell) so that the server replaces the shell. The
// process the harness measures, and whose rusage it reads at the reap, is
// then the server itself: a shell that forks it and is killed by SIGTERM
// never waits for it, and its CPU would be lost (measured: 0.00 s for a
// gnet peer that served 25k frames/s). A compound command keeps the shell
// in between; write "exec" before its server yourself for CPU figures.
func ShellArgv(command string) []string {
	words := strings.Fields(command)
	if len(words) == 0 || strings.ContainsAny(command, ";&|<>()$`\\\"'\n*?[]~#") || strings.Contains(words[0], "=") || words[0] == "exec" {
		return []string{"/bin/sh", "-c", command}
	}
	return []string{"/bin/sh", "-c", "exec " + command}
}

// CheckCommand refuses, before anything starts, a black-box command the
// shell would exec (a simple command, see ShellArgv) whose program is not
// an executable file, found as given (a path) or on $PATH: the error is a
// *StartFailure with Cause StartMissing, naming the program. A compound
// command is left to the shell, whose exit status 127 or 126 a run
// reports as the same cause.
func CheckCommand(command string) error {
	if argv := ShellArgv(command); argv[len(argv)-1] == command {
		return nil // compound, or exec written by the user: the shell's
	}
	prog := strings.Fields(command)[0]
	if _, err := exec.LookPath(prog); err != nil {
		return &StartFailure{Cause: StartMissing, Detail: err.Error(), Code: -1}
	}
	return nil
}

// loadBound is the longest a load generator with cfg runs.
func loadBound(cfg loadgen.Config) time.Duration {
	c := cfg.WithDefaults()
	return c.ConnectTimeout + c.Warmup + c.Duration + c.Drain + time.Second
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

const loadgenSynopsis = `reactorlab loadgen --config FILE --out DIR [--data ADDR] [--control ADDR] [--progress FILE]`

const loadgenDescription = `Runs the load generator alone, as reactorlab run places it in the lab:
the load FILE describes (JSON, as run writes it to loadgen-config.json),
against the target's addresses (--data and --control, or the file's).
It writes loadgen.hlog (an HdrHistogram interval log) and loadgen.json
(its summary) into DIR, appends a JSON line per progress report to
--progress, and prints the summary as one JSON line on stdout. SIGINT
or SIGTERM stops it early, with what was measured. Exit 0 when a
measurement was made (valid or not: the summary says), 1 when none
could be, 2 for bad flags or a configuration it refuses (nothing was
sent), 130 when interrupted.`

// LoadgenMain is `reactorlab loadgen` and the "loadgen" role: it runs the
// load generator with the configuration file it is given (--config, JSON
// as loadgen.Config marshals it), the target's addresses (--data,
// --control) overriding the file's, writes loadgen.hlog and loadgen.json
// into --out, appends one JSON line per progress report to --progress (if
// given), and prints the summary as one JSON line on stdout. It stops
// early, with what was measured, on SIGTERM or SIGINT. It returns 0 when a
// measurement was made (valid or not: the summary says), 1 when none could
// be, ExitUsage for bad flags or a configuration it refuses (on stderr, in
// the words of CheckLoad after the file's name, with a pointer to --help;
// nothing was started), cli.ExitInterrupted when a signal cut the run
// short (after writing what was measured). --help prints the help on
// stdout and returns 0.
func LoadgenMain(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab loadgen", loadgenSynopsis, loadgenDescription)
	fs := c.Flags
	cfgPath := fs.String("config", "", "the load to send: a JSON `file`, as run writes loadgen-config.json (required)")
	data := fs.String("data", "", "the target's data `address`, host:port (overrides the file's)")
	control := fs.String("control", "", "the target's control `address`, host:port (overrides the file's)")
	out := fs.String("out", "", "`directory` for loadgen.hlog and loadgen.json, which must exist (required)")
	progressPath := fs.String("progress", "", "append a JSON line per progress report to this `file`")
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	if *cfgPath == "" || *out == "" {
		return c.Usagef(stderr, "--config and --out are required")
	}
	raw, err := os.ReadFile(*cfgPath)
	if err != nil {
		return c.Usagef(stderr, "--config: %v", err)
	}
	var cfg loadgen.Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&cfg); err != nil {
		return c.Usagef(stderr, "%s: %v", *cfgPath, err)
	}
	if *data != "" {
		cfg.DataAddr = *data
	}
	if *control != "" {
		cfg.ControlAddr = *control
	}
	if err := loadError(cfg.WithDefaults().Validate()); err != nil {
		return c.Usagef(stderr, "%s: %v", *cfgPath, err)
	}
	if *progressPath != "" {
		f, err := os.OpenFile(*progressPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return c.Errorf(stderr, cli.ExitFail, "%v", err)
		}
		defer f.Close()
		cfg.Progress = func(p loadgen.Progress) {
			if line, err := json.Marshal(p); err == nil {
				f.Write(append(line, '\n'))
			}
		}
	}
	// The generator's loop is a locked thread; its progress reports and
	// signal handling need a P of their own, pinned or not (see serve).
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	if err := res.WriteFiles(*out); err != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	line, err := json.Marshal(res.Summary())
	if err != nil {
		return c.Errorf(stderr, cli.ExitFail, "summary: %v", err)
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if res.Interrupted {
		return cli.ExitInterrupted
	}
	return 0
}

// WriteSummary prints the cell's result for a person, wrk2-style: the
// setting, the latency distribution of data and control, throughput, CPU
// and memory per side, the ledger and the verdict. spectrum adds the
// detailed percentile spectrum of each latency class (read back from the
// cell's loadgen.hlog).
func (r *CellResult) WriteSummary(w io.Writer, spectrum bool) error {
	var b strings.Builder
	c := r.Cell
	what := c.Target + " (black box)"
	if c.Reactor != "" {
		what = string(c.Reactor) + " (reference reactor)"
		if len(c.ServeArgs) > 0 {
			what += " " + strings.Join(c.ServeArgs, " ")
		}
	}
	fmt.Fprintf(&b, "reactorlab run: %s\n", what)
	load := c.Load.WithDefaults()
	fmt.Fprintf(&b, "  %v measured after %v warm-up; %s\n", load.Duration, load.Warmup, describeLoad(load))
	if lab := r.Lab; lab != nil {
		where := "lab: server " + lab.Addr + ", load generator in its own namespace over veth"
		if lab.Mode != ModeLab {
			where = "loopback: server " + lab.Addr
			if lab.Fallback != "" {
				where += " (no lab: " + lab.Fallback + ")"
			}
		}
		if lab.UserNS {
			where += ", rootless (user namespace)"
		}
		fmt.Fprintf(&b, "  %s; %s\n", where, describePlacement(lab))
	}
	var hists map[string]*hdrhistogram.Histogram
	if r.Load != nil {
		var err error
		hists, err = results.MeasuredHistograms(filepath.Join(c.Dir, loadgen.HlogFile), r.Load.StartTime.Add(load.Warmup))
		if err != nil {
			fmt.Fprintf(&b, "  (latency: %v)\n", err)
		}
	}
	var cols []string
	for _, name := range []string{loadgen.ClassData, loadgen.ClassDataUncorrected, loadgen.ClassControl, loadgen.ClassStop} {
		// Without a steady source both data classes are measured from the
		// write: the second column would repeat the first.
		if name == loadgen.ClassDataUncorrected && load.Steady == 0 {
			continue
		}
		if h := hists[name]; h != nil && h.TotalCount() > 0 {
			cols = append(cols, name)
		}
	}
	if len(cols) > 0 {
		fmt.Fprintf(&b, "\n  Latency distribution (HdrHistogram, measured period)\n  %9s", "")
		for _, name := range cols {
			fmt.Fprintf(&b, " %16s", name)
		}
		b.WriteString("\n")
		for _, p := range []float64{50, 75, 90, 99, 99.9, 99.99, 99.999, 100} {
			fmt.Fprintf(&b, "  %8.3f%%", p)
			for _, name := range cols {
				fmt.Fprintf(&b, " %16s", fmtDuration(time.Duration(hists[name].ValueAtPercentile(p))))
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "  %9s", "count")
		for _, name := range cols {
			fmt.Fprintf(&b, " %16d", hists[name].TotalCount())
		}
		b.WriteString("\n")
		if load.Steady > 0 {
			b.WriteString("  data is measured from each frame's intended send time (corrected for coordinated omission);\n" +
				"  data-uncorrected from its actual write. Hot sources have no schedule: both from the write.\n")
		}
	}
	b.WriteString("\n")
	if s := r.Load; s != nil {
		fmt.Fprintf(&b, "  %-12s %s frames/s answered intact (data, measured period)\n", "Throughput", groupDigits(uint64(s.EchoRate+0.5)))
		t := s.Totals
		fmt.Fprintf(&b, "  %-12s data: sent %s = echoed %s + rejected %s + lost %s + corrupted %s + abandoned by fault %s + unanswered %s;\n"+
			"  %-12s       duplicated %s, unexpected %s, wrong connection %s\n",
			"Ledger", groupDigits(t.Sent), groupDigits(t.Echoed), groupDigits(t.Rejected), groupDigits(t.Lost), groupDigits(t.CorruptedAnswers),
			groupDigits(t.Abandoned), groupDigits(t.Unanswered), "", groupDigits(t.Duplicated), groupDigits(t.Unexpected), groupDigits(t.WrongConn))
		if !t.Balanced() {
			fmt.Fprintf(&b, "  %-12s       (the sum does not balance: a bug of the load generator's)\n", "")
		}
		if ct := s.ControlTotals; ct.Sent > 0 {
			fmt.Fprintf(&b, "  %-12s control: sent %s, echoed %s, lost %s\n", "", groupDigits(ct.Sent), groupDigits(ct.Echoed), groupDigits(ct.Lost))
		}
		if r.Lab != nil {
			// Both per-frame figures divide by every frame of the run
			// (warm-up and drain included): the server's CPU over its
			// whole life (it idles before and after the load), the load
			// generator's over its run (its start-up left out).
			if p := r.Lab.Server; p != nil {
				writeCPU(&b, "CPU, memory", "server", time.Duration(p.UserNs), time.Duration(p.SysNs), p.Elapsed, "its life", t.Echoed, p.MaxRSS)
			}
			if p := r.Lab.Client; p != nil {
				sc := s.SelfCheck
				user, sys := time.Duration(sc.CPUUserS*1e9), time.Duration(sc.CPUSysS*1e9)
				writeCPU(&b, "", "loadgen", user, sys, time.Duration(sc.RunS*1e9), "its run", t.Echoed, p.MaxRSS)
			}
		}
		if r.Server != nil {
			l := r.Server.Ledger
			fmt.Fprintf(&b, "  %-12s accepted %s, completed %s, rejected %s (reactor's final statistics, stopped by %s)\n", "Server",
				groupDigits(l.Accepted), groupDigits(l.Completed), groupDigits(l.Rejected), r.Server.StoppedBy)
		}
		if st := s.Stop; st != nil {
			fmt.Fprintf(&b, "  %-12s %s", "STOP probe", st.Status)
			if st.LatencyUs > 0 {
				fmt.Fprintf(&b, " after %s", fmtDuration(time.Duration(st.LatencyUs*1e3)))
			}
			if st.Ledger != nil {
				fmt.Fprintf(&b, "; ledger accepted %d, completed %d, rejected %d, balanced %v", st.Ledger.Accepted, st.Ledger.Completed, st.Ledger.Rejected, st.Balanced)
			}
			b.WriteString("\n")
		}
		sc := s.SelfCheck
		fmt.Fprintf(&b, "  %-12s limit: %s", "Self-check", sc.Limit)
		if sc.TargetRate > 0 {
			fmt.Fprintf(&b, "; steady rate %.0f of %.0f frames/s (%.2f%%), send lag p99 %s", sc.AchievedRate, sc.TargetRate, 100*sc.RateRatio,
				fmtDuration(time.Duration(sc.SendLagP99Us*1e3)))
		}
		b.WriteString("\n")
		for _, why := range sc.Reasons {
			fmt.Fprintf(&b, "  %-12s   %s\n", "", why)
		}
	}
	if r.Valid {
		fmt.Fprintf(&b, "  %-12s VALID\n", "Verdict")
	} else {
		fmt.Fprintf(&b, "  %-12s INVALID\n", "Verdict")
		for _, why := range r.Invalid {
			fmt.Fprintf(&b, "  %-12s   - %s\n", "", why)
		}
	}
	fmt.Fprintf(&b, "  %-12s %s\n", "Files", c.Dir)
	if spectrum {
		for _, name := range cols {
			b.WriteString("\n")
			var sb strings.Builder
			if err := results.WriteSpectrum(&sb, "Latency: "+name, hists[name]); err != nil {
				return err
			}
			b.WriteString(sb.String())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describeLoad says what the load generator did, in a line.
func describeLoad(c loadgen.Config) string {
	var parts []string
	if c.Hot > 0 {
		parts = append(parts, fmt.Sprintf("%s × %d in flight", plural(c.Hot, "hot source"), c.InFlight))
	}
	if c.Steady > 0 {
		parts = append(parts, fmt.Sprintf("%s at %g frames/s in all (window %d)", plural(c.Steady, "steady source"), c.Rate, c.Window))
	}
	if c.ControlEvery > 0 {
		parts = append(parts, fmt.Sprintf("PING every %v on %s", c.ControlEvery, plural(c.Control, "control connection")))
	}
	if c.StopAt > 0 {
		parts = append(parts, fmt.Sprintf("STOP at %v", c.StopAt))
	}
	parts = append(parts, fmt.Sprintf("%d-byte frames", c.Payload+32))
	if len(c.Faults) > 0 {
		parts = append(parts, "wire faults "+strings.Join(c.Faults, " "))
	}
	return strings.Join(parts, ", ")
}

// describePlacement says where each side ran and whether every thread
// stayed there.
func describePlacement(lab *LabResult) string {
	side := func(name string, p *ProcResult) string {
		if p == nil {
			return name + ": no record"
		}
		s := name + " unpinned"
		if p.CPU >= 0 {
			ok := "every thread verified"
			if !p.AffinityOK {
				ok = "a thread was seen off it"
			}
			s = fmt.Sprintf("%s on CPU %d (%s)", name, p.CPU, ok)
		}
		if l := p.CPULimit; l != nil {
			s += fmt.Sprintf(", capped at %g CPU (throttled in %d of %d periods of %g ms)", l.Share, l.Throttled, l.Periods, l.PeriodMs)
		}
		return s
	}
	return side("server", lab.Server) + ", " + side("loadgen", lab.Client)
}

// writeCPU prints one side's CPU time over a period, its share of a CPU
// (when the period's length over is known, > 0) and its cost per echoed
// frame.
func writeCPU(b *strings.Builder, label, name string, user, sys, over time.Duration, period string, frames uint64, maxRSS int64) {
	share := 0.0
	if over > 0 {
		share = (user + sys).Seconds() / over.Seconds()
	}
	perFrame := "-"
	if frames > 0 {
		perFrame = fmtDuration((user + sys) / time.Duration(frames))
	}
	shareText := ""
	if over > 0 {
		shareText = fmt.Sprintf("%.2f CPU ", share)
		period += fmt.Sprintf(", %.1f s", over.Seconds())
	}
	fmt.Fprintf(b, "  %-12s %-7s %s(user %.2f s + sys %.2f s over %s), %s per echoed frame, peak RSS %.1f MiB\n",
		label, name, shareText, user.Seconds(), sys.Seconds(), period, perFrame, float64(maxRSS)/(1<<20))
}

// fmtDuration prints d with three significant digits in a unit a person
// reads at a glance.
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3gs", d.Seconds())
}

// plural prints "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// groupDigits prints n with thousands separated by commas.
func groupDigits(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
