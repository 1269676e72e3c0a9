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
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// labModes maps --lab to the harness's modes.
var labModes = map[string]harness.Mode{"auto": harness.ModeAuto, "on": harness.ModeLab, "off": harness.ModeLoopback}

// runCell is `reactorlab run`: one measured cell.
func runCell(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reactorlab run", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	out := fs.String("out", "", "directory for the run's files (default reactorlab-runs/NAME-TIME)")
	spectrum := fs.Bool("spectrum", false, "also print the detailed percentile spectrum of each latency class")
	jsonOut := fs.Bool("json", false, "print the whole result as JSON on stdout instead of the text summary")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	refuse := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "reactorlab run: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return refuse("unexpected argument %q (quote a cmd: target's command)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"listen", "control-listen"} {
		if set[name] {
			return refuse("--%s: the harness chooses the server's addresses", name)
		}
	}
	if c := *serverCPU; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 || c > proc.MaxCPUShare || c > 0 && c < proc.MinCPUShare {
		return refuse("--server-cpu %v: want a number of CPUs, %v..%d, or 0 for no cap", c, proc.MinCPUShare, proc.MaxCPUShare)
	}
	cell := harness.Cell{Load: load, CPUs: cpus, Grace: *grace, ServerCPU: *serverCPU}
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
	cell.Dir = *out
	if cell.Dir == "" {
		cell.Dir = filepath.Join("reactorlab-runs", name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := cell.Validate(); err != nil {
		return refuse("%v", strings.TrimPrefix(err.Error(), "cell: "))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	progress := newProgressPrinter(stderr, cell.Load.Warmup+cell.Load.Duration)
	res, err := harness.RunCell(ctx, cell, progress.report)
	progress.done()
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab run: %v\n", err)
		return 1
	}
	if *jsonOut {
		if err := writeJSON(stdout, res); err != nil {
			fmt.Fprintf(stderr, "reactorlab run: %v\n", err)
			return 1
		}
	} else if err := res.WriteSummary(stdout, *spectrum); err != nil {
		fmt.Fprintf(stderr, "reactorlab run: %v\n", err)
		return 1
	}
	if !res.Valid {
		return 1
	}
	return 0
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
// in place on a terminal, plain lines otherwise.
type progressPrinter struct {
	w        io.Writer
	terminal bool
	total    time.Duration
	printed  bool
}

func newProgressPrinter(w io.Writer, total time.Duration) *progressPrinter {
	p := &progressPrinter{w: w, total: total}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progressPrinter) report(r loadgen.Progress) {
	phase := "warm-up"
	if r.Measuring {
		phase = "measuring"
	}
	line := fmt.Sprintf("%5.1fs/%.1fs %-9s sent %d echoed %d  %.0f frames/s  data p99 %v  control p99 %v",
		r.Elapsed.Seconds(), p.total.Seconds(), phase, r.Sent, r.Echoed, r.Rate,
		r.DataP99.Round(time.Microsecond), r.ControlP99.Round(time.Microsecond))
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.printed = true
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
