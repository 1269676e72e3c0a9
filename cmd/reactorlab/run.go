//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// labModes maps --lab to the harness's modes.
var labModes = map[string]harness.Mode{"auto": harness.ModeAuto, "on": harness.ModeLab, "off": harness.ModeLoopback}

const runSynopsis = `reactorlab run --reactor DESIGN [load flags] [reactor flags] [--out DIR] [--json FILE|-]
reactorlab run --target cmd:'COMMAND' [load flags] [--out DIR] [--json FILE|-]`

const runDescription = `Measures one cell: a reference reactor (--reactor, configured by the
reactor flags, as serve takes them) or a black-box server (--target,
which must echo bytes on the address in REACTORLAB_LISTEN or {addr})
under the load the load flags describe, in the lab (network namespaces
joined by veth, each side pinned to a CPU) or on loopback. It prints
progress and then a wrk2-style summary (latency percentiles, throughput,
CPU and memory per side, the frame ledger, the verdict) and writes the
run's files into --out: summary.txt, summary.json, loadgen.hlog,
loadgen.json, loadgen-config.json, progress.jsonl; a directory that
holds a run already, or an --out that is no directory, is refused.
--json FILE also writes the whole result as JSON to FILE; --json -
writes it alone on stdout, and the summary and every other human line on
stderr. Exit 0 for a valid run, 1 for an invalid one (a frame lost,
placement broken, something left behind) or one that could not finish, 2
when refused before anything ran (a bad flag or value; a target whose
program is missing, that exits at once or does not listen within
--start-timeout), 130 when interrupted (what was measured is reported).`

// runCell is `reactorlab run`: one measured cell.
func runCell(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab run", runSynopsis, runDescription)
	fs := c.Flags
	reactorName := fs.String("reactor", "", "reference reactor to measure: "+designList())
	targetSpec := fs.String("target", "", "or a black-box server: cmd:'COMMAND', run by /bin/sh -c with REACTORLAB_LISTEN=host:port and {addr} replaced; it must echo bytes")
	cfg := reactors.DefaultConfig()
	cfg.Flags(fs) // the reactor's configuration, --callback among it
	load := loadgen.Config{Duration: 10 * time.Second, Warmup: 2 * time.Second}
	fs.IntVar(&load.Hot, "hot", 1, "hot sources: closed loop, --inflight frames in flight each")
	fs.IntVar(&load.InFlight, "inflight", 16, "frames in flight per hot source (K)")
	fs.IntVar(&load.Steady, "steady", 0, "steady sources: open loop at --rate in all")
	fs.Float64Var(&load.Rate, "rate", 0, "frames per second across the steady sources (required with --steady)")
	fs.IntVar(&load.Window, "window", loadgen.DefaultWindow, "frames outstanding per steady source before it waits")
	fs.IntVar(&load.Payload, "payload", loadgen.DefaultPayload, "payload bytes per DATA frame (the header adds 32)")
	fs.DurationVar(&load.ControlEvery, "control-every", 10*time.Millisecond, "PING period on each control connection (0: no control probes)")
	fs.IntVar(&load.Control, "control", 0, "control connections (0: 1 when there are probes)")
	fs.DurationVar(&load.StopAt, "stop-at", 0, "send STOP this long after the warm-up and record how long until STOP_ACK (0: none)")
	fs.DurationVar(&load.Duration, "duration", load.Duration, "measured time, after the warm-up")
	fs.DurationVar(&load.Warmup, "warmup", load.Warmup, "load sent before measuring")
	fs.DurationVar(&load.Drain, "drain", loadgen.DefaultDrain, "time outstanding frames may still be answered after sending stops")
	fs.DurationVar(&load.Interval, "interval", loadgen.DefaultInterval, "interval of the HDR log and of progress reports")
	var faultSpecs []string
	fs.Func("fault", "fault NAME[:k=v,...], repeatable: a wire fault ("+strings.Join(wireFaultNames(), ", ")+
		") on every data connection, or a reactor fault (mutant; --reactor only): "+strings.Join(reactors.FaultNames, ", "),
		func(s string) error { faultSpecs = append(faultSpecs, s); return nil })
	cpus := defaultCPUs()
	fs.Var(&cpus, "cpus", "placement: server=CPU,loadgen=CPU (or none; default: the first two CPUs this process may use)")
	serverCPU := fs.Float64("server-cpu", 0, "cap the server's CPU time at this many CPUs (e.g. 0.5), by a cgroup CPU quota, so that it and not the load generator is the limit (0: no cap)")
	labMode := fs.String("lab", "auto", "network namespaces and veth: auto (lab if possible, else loopback, saying why), on (lab or fail), off (loopback)")
	grace := fs.Duration("grace", harness.DefaultGrace, "time between SIGTERM and SIGKILL when stopping the server")
	startTimeout := fs.Duration("start-timeout", harness.DefaultStartTimeout, "how long the server may take to accept on its addresses; one that does not is refused (exit 2)")
	out := fs.String("out", "", "directory for the run's files, new or without a run in it (default reactorlab-runs/NAME-TIME)")
	spectrum := fs.Bool("spectrum", false, "also print the detailed percentile spectrum of each latency class")
	jsonOut := fs.String("json", "", "also write the whole result as JSON to `FILE`; - writes it alone on stdout, and the summary on stderr")
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	refuse := func(format string, a ...any) int { return c.Usagef(stderr, format, a...) }
	set := c.Set()
	for _, name := range []string{"listen", "control-listen"} {
		if set[name] {
			return refuse("--%s: the harness chooses the server's addresses", name)
		}
	}
	if c := *serverCPU; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 || c > proc.MaxCPUShare || c > 0 && c < proc.MinCPUShare {
		return refuse("--server-cpu %v: want a number of CPUs, %v..%d, or 0 for no cap", c, proc.MinCPUShare, proc.MaxCPUShare)
	}
	if *startTimeout <= 0 || *startTimeout > harness.MaxStartTimeout {
		return refuse("--start-timeout = %v (accepted: (0, %v])", *startTimeout, harness.MaxStartTimeout)
	}
	cell := harness.Cell{Load: load, CPUs: cpus, Grace: *grace, ServerCPU: *serverCPU, StartTimeout: *startTimeout}
	mode, ok := labModes[*labMode]
	if !ok {
		return refuse("--lab %q (accepted: auto, on, off)", *labMode)
	}
	cell.Mode = mode
	var name string
	switch {
	case (*reactorName == "") == (*targetSpec == ""):
		return refuse("give one of --reactor (%s) and --target cmd:'COMMAND'", designList())
	case *reactorName != "":
		d, err := reactors.ParseDesign(*reactorName)
		if err != nil {
			return refuse("--reactor: %v", err)
		}
		cell.Reactor, name = d, string(d)
	default:
		command, ok := strings.CutPrefix(*targetSpec, "cmd:")
		if !ok || strings.TrimSpace(command) == "" {
			return refuse("--target %q: want cmd:'COMMAND'", *targetSpec)
		}
		cell.Target, name = command, "cmd"
		// A black box has no configuration of ours: refuse the reactor's
		// flags rather than ignore them.
		var reactorFlags []string
		probe := flag.NewFlagSet("", flag.ContinueOnError)
		def := reactors.DefaultConfig()
		def.Flags(probe)
		probe.VisitAll(func(f *flag.Flag) {
			if set[f.Name] {
				reactorFlags = append(reactorFlags, "--"+f.Name)
			}
		})
		if len(reactorFlags) > 0 {
			return refuse("%s: reference reactors only (--target is a black box)", strings.Join(reactorFlags, ", "))
		}
	}
	for _, spec := range faultSpecs {
		_, wireErr := faults.ParseWire(spec)
		if wireErr == nil {
			cell.Load.Faults = append(cell.Load.Faults, spec)
			continue
		}
		if cell.Reactor == "" {
			return refuse("--fault: %v (reactor faults apply to --reactor only)", wireErr)
		}
		if err := reactors.ParseFault(spec, &cfg.Faults); err != nil {
			return refuse("--fault %q: neither a wire fault (%s) nor a reactor fault (%v)", spec, strings.Join(wireFaultNames(), ", "), err)
		}
	}
	cell.Config = cfg
	// What the serve child and the load generator would refuse, refused
	// here first, in their words.
	if cell.Reactor != "" {
		if err := harness.CheckServe(cell.Reactor, cfg); err != nil {
			return refuse("%v", err)
		}
	}
	if err := harness.CheckLoad(cell.Load); err != nil {
		return refuse("%v", err)
	}
	cell.Dir = *out
	if cell.Dir == "" {
		cell.Dir = filepath.Join("reactorlab-runs", name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := cell.Validate(); err != nil {
		return refuse("%v", strings.TrimPrefix(err.Error(), "cell: "))
	}
	if err := harness.CheckCellDir(cell.Dir); err != nil {
		return refuse("--out %v", err)
	}
	if cell.Target != "" {
		if err := harness.CheckCommand(cell.Target); err != nil {
			if sf := (*harness.StartFailure)(nil); errors.As(err, &sf) {
				return runRefusal(c, stderr, cell, sf)
			}
			return c.Errorf(stderr, cli.ExitUsage, "--target: %v", err)
		}
	}

	// The first SIGINT or SIGTERM winds the run down: the load generator
	// stops and reports what it measured. A second one ends this process
	// (and with it the lab) at once.
	intr := onInterrupt()
	defer intr.stop()
	cell.Interrupt = intr.c
	created := missingDirs(cell.Dir)
	progress := newProgressPrinter(stderr, cell.Load)
	res, err := harness.RunCell(context.Background(), cell, progress.report)
	progress.done()
	interrupted := intr.happened()
	if sf := (*harness.StartFailure)(nil); errors.As(err, &sf) && !interrupted {
		// Nothing was run: leave nothing behind, and refuse the target.
		removeRun(cell.Dir, created)
		return runRefusal(c, stderr, cell, sf)
	}
	if res == nil {
		code := cli.ExitFail
		if interrupted {
			code = cli.ExitInterrupted
		}
		return c.Errorf(stderr, code, "%v", err)
	}
	// The result is reported whatever happened: the summary on stdout, or
	// with --json - the JSON there and the summary on stderr.
	summaryTo := stdout
	if *jsonOut == cli.StdoutPath {
		summaryTo = stderr
	}
	if *jsonOut != "" {
		if werr := cli.WriteTo(*jsonOut, stdout, func(w io.Writer) error { return writeJSON(w, res) }); werr != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", werr)
		}
	}
	if werr := res.WriteSummary(summaryTo, *spectrum); werr != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", werr)
	}
	switch {
	case interrupted:
		fmt.Fprintf(stderr, "reactorlab run: interrupted; what was measured is above and in %s\n", res.Cell.Dir)
		return cli.ExitInterrupted
	case err != nil:
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	case !res.Valid:
		return cli.ExitFail
	}
	return cli.ExitOK
}

// interrupt is closed by the first SIGINT or SIGTERM, after which the
// signals' default action (ending the process) is restored.
type interrupt struct {
	c    chan struct{}
	sigs chan os.Signal
	end  chan struct{}
	done chan struct{}
}

// onInterrupt catches SIGINT and SIGTERM until stop.
func onInterrupt() *interrupt {
	i := &interrupt{c: make(chan struct{}), sigs: make(chan os.Signal, 1), end: make(chan struct{}), done: make(chan struct{})}
	signal.Notify(i.sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		defer close(i.done)
		select {
		case <-i.sigs:
			signal.Stop(i.sigs)
			close(i.c)
		case <-i.end:
		}
	}()
	return i
}

// happened reports whether a signal came.
func (i *interrupt) happened() bool {
	select {
	case <-i.c:
		return true
	default:
		return false
	}
}

// stop stops catching the signals and ends the goroutine.
func (i *interrupt) stop() {
	signal.Stop(i.sigs)
	close(i.end)
	<-i.done
}

// missingDirs lists dir and those of its parents that do not exist yet,
// deepest first: what a run will create, and removeRun may remove.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			return out
		}
		out = append(out, d)
	}
}

// removeRun removes a run's files from dir, then the directories the run
// created (created, deepest first) if they are empty.
func removeRun(dir string, created []string) {
	for _, name := range harness.CellFiles {
		os.Remove(filepath.Join(dir, name))
	}
	for _, d := range created {
		if os.Remove(d) != nil {
			return
		}
	}
}

// runRefusal refuses the cell's server, which could not be started (sf,
// from RunCell or harness.CheckCommand), as conform and footprint refuse a
// target: one message in proc.StartReport's words, with the hint a longer
// --start-timeout may help where it may; it returns cli.ExitUsage.
func runRefusal(c *cli.Command, stderr io.Writer, cell harness.Cell, sf *harness.StartFailure) int {
	if sf.Target == "" {
		sf.Target = cell.Label()
	}
	msg := "the target could not be started, so nothing was measured: " + sf.Error()
	if hint := sf.Report().Hint("--start-timeout"); hint != "" {
		msg += "\n" + hint
	}
	return c.Errorf(stderr, cli.ExitUsage, "%s", msg)
}

func designList() string {
	names := make([]string, len(reactors.Designs))
	for i, d := range reactors.Designs {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

func wireFaultNames() []string {
	var names []string
	for _, f := range faults.Wires() {
		names = append(names, f.Name())
	}
	return names
}

// progressPrinter shows the load generator's progress: one line rewritten
// in place on a terminal, plain lines otherwise. Data frames and control
// PINGs are shown apart, each only when the load has them.
type progressPrinter struct {
	w             io.Writer
	terminal      bool
	total         time.Duration
	data, control bool
	printed       bool
}

func newProgressPrinter(w io.Writer, load loadgen.Config) *progressPrinter {
	p := &progressPrinter{w: w, total: load.Warmup + load.Duration,
		data: load.Hot+load.Steady > 0, control: load.ControlEvery > 0}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progressPrinter) report(r loadgen.Progress) {
	if line := p.line(r); p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.printed = true
}

// line is the progress line of report r: data frames (sent, echoed, the
// rate) and control PINGs apart.
func (p *progressPrinter) line(r loadgen.Progress) string {
	phase := "warm-up"
	if r.Measuring {
		phase = "measuring"
	}
	line := fmt.Sprintf("%5.1fs/%.1fs %-9s", r.Elapsed.Seconds(), p.total.Seconds(), phase)
	if p.data {
		line += fmt.Sprintf("  data: sent %d echoed %d, %.0f frames/s, p99 %v", r.Sent, r.Echoed, r.Rate, r.DataP99.Round(time.Microsecond))
	}
	if p.control {
		line += fmt.Sprintf("  control: %d PINGs echoed, p99 %v", r.ControlEchoed, r.ControlP99.Round(time.Microsecond))
	}
	return line
}

func (p *progressPrinter) done() {
	if p.terminal && p.printed {
		fmt.Fprintln(p.w)
	}
}

// defaultCPUs is the default placement: the first two CPUs this process
// may use, server then load generator, or no pinning where it has one.
func defaultCPUs() harness.CPUs {
	var allowed unix.CPUSet
	if unix.SchedGetaffinity(0, &allowed) != nil {
		return harness.Unpinned
	}
	var mine []int
	for i := 0; i < 1024 && len(mine) < 2; i++ {
		if allowed.IsSet(i) {
			mine = append(mine, i)
		}
	}
	if len(mine) < 2 {
		return harness.Unpinned
	}
	return harness.CPUs{Server: mine[0], Client: mine[1]}
}

// writeJSON writes v to w as indented JSON (the --json output of run and
// footprint).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
