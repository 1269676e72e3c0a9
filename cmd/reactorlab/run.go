//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/target"
)

// labModes maps --lab to the harness's modes.
var labModes = map[string]lab.Mode{"auto": lab.ModeAuto, "on": lab.ModeLab, "off": lab.ModeLoopback}

const runSynopsis = `reactorlab run --target DESIGN [load flags] [reactor flags] [--out DIR] [--json FILE|-]
reactorlab run --target cmd:'COMMAND' [load flags] [--out DIR] [--json FILE|-]`

const runDescription = `Measures one cell: a reference reactor (--target DESIGN, configured by
the reactor flags, as serve takes them) or a black-box server (--target
cmd:'COMMAND', which must echo bytes on the address in REACTORLAB_LISTEN
or {addr}) under the load the load flags describe, in the lab (network
namespaces joined by veth, each side pinned to its CPU set, each loop
thread to one CPU of it: --cpus) or on loopback. It prints progress and
then a wrk2-style summary (latency percentiles, throughput, CPU and
memory per side, the frame ledger, the verdict) and writes the run's
files into --out: summary.txt, summary.json, loadgen.hlog, loadgen.json,
loadgen-config.json, progress.jsonl; a directory that holds a run
already, or an --out that is no directory, is refused. --json FILE also
writes the whole result as JSON to FILE; --json - writes it alone on
stdout, and the summary and every other human line on stderr. Exit 0 for
a valid run, 1 for an invalid one (a frame lost, placement broken,
something left behind) or one that could not finish, 2 when refused
before anything ran (a bad flag or value; a target whose program is
missing, that exits at once or does not listen within --start-timeout),
130 when interrupted (what was measured is reported). --reactor is an
alias of --target, for command lines written with it.`

// runFlags are the values of `reactorlab run`'s flags.
type runFlags struct {
	reactor, target string
	cfg             reactors.Config // the reactor's configuration, --callback among it
	load            loadgen.Config
	faults          []string // every --fault, in order
	cpuPlacement    lab.Placement
	serverCPU       float64
	lab             string
	grace           time.Duration
	startTimeout    time.Duration
	out             string
	spectrum        bool
	json            string
}

// newRunCommand is `reactorlab run`'s help and flags, bound to the
// runFlags it returns.
func newRunCommand() (*cli.Command, *runFlags) {
	c := cli.New("reactorlab run", runSynopsis, runDescription)
	fs := c.Flags
	f := &runFlags{cfg: reactors.DefaultConfig()}
	fs.StringVar(&f.target, "target", "", "what to measure (`DESIGN|cmd:COMMAND`): DESIGN is a reference reactor ("+designs.NameList()+"), configured by the reactor flags; cmd:COMMAND is a black-box server, run by /bin/sh -c with REACTORLAB_LISTEN=host:port and {addr} replaced; it must echo bytes")
	fs.StringVar(&f.reactor, "reactor", "", "an alias of --target (`DESIGN|cmd:COMMAND`), so that command lines written with it still run; give one of the two")
	// The reactor's flags, as serve takes them, but for those the
	// harness sets (runRefusedFlags): run's help does not list them.
	reactorFlags := flag.NewFlagSet("", flag.ContinueOnError)
	f.cfg.Flags(reactorFlags)
	var reactorNames, loadNames []string
	reactorFlags.VisitAll(func(fl *flag.Flag) {
		if _, refused := runRefusedFlags[fl.Name]; !refused {
			fs.Var(fl.Value, fl.Name, fl.Usage)
			reactorNames = append(reactorNames, fl.Name)
		}
	})
	// The load flags, from loadgen's table of knobs; loadgen-loops's help
	// adds the default placement here.
	before := map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) { before[fl.Name] = true })
	for _, k := range loadgen.Knobs {
		usage := k.Help
		if k.Name == "loadgen_loops" {
			usage += " (0: " + harness.DefaultLoadLoopsRule + "; here, with the default placement, " + defaultLoopsText() + ")"
		}
		k.AddFlag(fs, &f.load, usage)
	}
	fs.Func("fault", "fault NAME[:k=v,...], repeatable: a wire fault ("+strings.Join(harness.WireFaultNames(), ", ")+
		") on every data connection, or a reactor fault (mutant; a reference reactor only): "+strings.Join(reactors.FaultNames, ", "),
		func(s string) error { f.faults = append(f.faults, s); return nil })
	f.cpuPlacement = defaultPlacement()
	fs.Var(&f.cpuPlacement, "cpus", "`PLACEMENT`: server=LIST,loadgen=LIST, each a CPU list (0-3,8), count:N (the first N CPUs left to it) or none; the sides never share a CPU; each loop thread of the reference reactor and the load generator on one CPU of its side's set, round-robin (default: "+lab.DefaultPlacementText+"; here "+defaultPlacement().String()+")")
	fs.Float64Var(&f.serverCPU, "server-cpu", 0, "cap the server's CPU time at this many CPUs (e.g. 0.5), by a cgroup CPU quota, so that it and not the load generator is the limit (0: no cap)")
	fs.StringVar(&f.lab, "lab", "auto", "network namespaces and veth: auto (lab if possible, else loopback, saying why), on (lab or fail), off (loopback)")
	fs.DurationVar(&f.grace, "grace", lab.DefaultGrace, "time between SIGTERM and SIGKILL when stopping the server")
	fs.DurationVar(&f.startTimeout, "start-timeout", harness.DefaultStartTimeout, "how long the server may take to accept on its addresses; one that does not is refused (exit 2)")
	fs.StringVar(&f.out, "out", "", "directory for the run's files, new or without a run in it (default reactorlab-runs/NAME-TIME)")
	fs.BoolVar(&f.spectrum, "spectrum", false, "also print the detailed percentile spectrum of each latency class")
	fs.StringVar(&f.json, "json", "", "also write the whole result as JSON to `FILE`; - writes it alone on stdout, and the summary on stderr")
	fs.VisitAll(func(fl *flag.Flag) {
		if !before[fl.Name] && !slices.Contains(runPlaceFlags, fl.Name) && !slices.Contains(runOutputFlags, fl.Name) && fl.Name != "fault" {
			loadNames = append(loadNames, fl.Name)
		}
	})
	c.Groups = []cli.FlagGroup{
		{Title: "what to measure", Names: []string{"target", "reactor", "fault"}},
		{Title: "load (the load generator's knobs)", Names: loadNames},
		{Title: "where it runs", Names: runPlaceFlags},
		{Title: "output", Names: runOutputFlags},
		{Title: "reactor flags (a reference reactor only, as serve takes them)", Names: reactorNames},
	}
	return c, f
}

// runPlaceFlags and runOutputFlags are run's own flags about where and
// how long the cell runs, and about what it writes: headings of its help.
var (
	runPlaceFlags  = []string{"cpus", "server-cpu", "lab", "grace", "start-timeout"}
	runOutputFlags = []string{"out", "spectrum", "json"}
)

// runRefusedFlags are the reactor flags serve takes and run does not,
// with why: the harness sets them. run does not define them; given, they
// are refused in these words (refusedRunFlag) rather than as unknown.
var runRefusedFlags = map[string]string{
	"listen":         "the harness chooses the server's addresses",
	"control-listen": "the harness chooses the server's addresses",
	"loop-cpus":      "the harness pins the reactor's loops to the server's set, one CPU each (give the set with --cpus server=LIST)",
}

// refusedRunFlag finds the first of runRefusedFlags among args (before a
// "--"), as -name, --name or --name=value; "" when there is none.
func refusedRunFlag(args []string) (name, why string) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		n, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if why, ok := runRefusedFlags[n]; ok {
			return n, why
		}
	}
	return "", ""
}

// runCell is `reactorlab run`: one measured cell.
func runCell(args []string, stdout, stderr io.Writer) int {
	c, f := newRunCommand()
	if name, why := refusedRunFlag(args); name != "" {
		return c.Usagef(stderr, "--%s: %s", name, why)
	}
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	cell, err := f.cellSpec(c.Set())
	if err != nil {
		return c.Usagef(stderr, "%v", err)
	}
	if cell.Target.IsCommand() {
		if err := harness.CheckCommand(cell.Target.Command()); err != nil {
			if sf := (*target.StartError)(nil); errors.As(err, &sf) {
				return runRefusal(c, stderr, cell, sf)
			}
			return c.Errorf(stderr, cli.ExitUsage, "--target: %v", err)
		}
	}
	return f.measure(c, cell, stdout, stderr)
}

// cellSpec is the cell the flags describe (set: the flags given), checked
// as the harness will check it; the error is a usage error's message.
func (f *runFlags) cellSpec(set map[string]bool) (harness.CellSpec, error) {
	cell, err := f.placement()
	if err != nil {
		return cell, err
	}
	name, err := f.server(&cell, set)
	if err != nil {
		return cell, err
	}
	if err := f.splitFaults(&cell); err != nil {
		return cell, err
	}
	cell.Config = f.cfg
	// What the serve child and the load generator would refuse, refused
	// here first, in their words.
	if cell.Target.IsDesign() {
		if err := roles.CheckServe(reactors.DesignName(cell.Target.Design()), cell.Config); err != nil {
			return cell, err
		}
	}
	if err := roles.CheckLoad(cell.Load); err != nil {
		return cell, err
	}
	cell.Dir = f.out
	if cell.Dir == "" {
		cell.Dir = filepath.Join("reactorlab-runs", name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := cell.Validate(); err != nil {
		return cell, errors.New(strings.TrimPrefix(err.Error(), "cell: "))
	}
	if err := harness.CheckCellDir(cell.Dir); err != nil {
		return cell, fmt.Errorf("--out %v", err)
	}
	return cell, nil
}

// placement is the cell's load and where it runs: the CPUs, the server's
// CPU cap, the lab mode, the grace and the start timeout; the server's
// addresses and its loops' CPUs are the harness's to choose
// (runRefusedFlags).
func (f *runFlags) placement() (harness.CellSpec, error) {
	if err := lab.CheckServerCPU(f.serverCPU); err != nil {
		return harness.CellSpec{}, fmt.Errorf("--server-cpu %v: %w", f.serverCPU, err)
	}
	if f.startTimeout <= 0 || f.startTimeout > harness.MaxStartTimeout {
		return harness.CellSpec{}, fmt.Errorf("--start-timeout = %v (accepted: (0, %v])", f.startTimeout, harness.MaxStartTimeout)
	}
	cell := harness.CellSpec{Load: f.load, Placement: f.cpuPlacement, Grace: f.grace, ServerCPU: f.serverCPU, StartTimeout: f.startTimeout}
	mode, ok := labModes[f.lab]
	if !ok {
		return cell, fmt.Errorf("--lab %q (accepted: auto, on, off)", f.lab)
	}
	cell.Mode = mode
	return cell, nil
}

// server sets the cell's server from --target or its alias --reactor,
// never both: a reference reactor, or a black box with none of the
// reactor's flags. It returns the name the default directory starts with.
func (f *runFlags) server(cell *harness.CellSpec, set map[string]bool) (name string, err error) {
	flagName, spec := "--target", f.target
	switch {
	case f.target != "" && f.reactor != "":
		return "", errors.New("give one of --target and --reactor (its alias), not both")
	case f.target == "" && f.reactor == "":
		return "", fmt.Errorf("--target is required (accepted: %s; --reactor is its alias)", target.Accepted(designs.Names()))
	case f.reactor != "":
		flagName, spec = "--reactor", f.reactor
	}
	t, err := target.Parse(spec, designs.Names())
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	cell.Target = t
	if t.IsDesign() {
		return t.Design(), nil
	}
	// A black box has no configuration of ours: refuse the reactor's
	// flags rather than ignore them.
	var reactorFlags []string
	probe := flag.NewFlagSet("", flag.ContinueOnError)
	def := reactors.DefaultConfig()
	def.Flags(probe)
	probe.VisitAll(func(fl *flag.Flag) {
		if set[fl.Name] {
			reactorFlags = append(reactorFlags, "--"+fl.Name)
		}
	})
	if len(reactorFlags) > 0 {
		return "", fmt.Errorf("%s: reference reactors only (a cmd: target is a black box)", strings.Join(reactorFlags, ", "))
	}
	return "cmd", nil
}

// splitFaults places each --fault (harness.SplitFault): a wire fault in
// the cell's load, as given, a reactor fault in the reactor's
// configuration.
func (f *runFlags) splitFaults(cell *harness.CellSpec) error {
	for _, spec := range f.faults {
		wire, err := harness.SplitFault(spec, cell.Target.IsDesign(), &f.cfg.Faults)
		var fe *harness.FaultError
		switch {
		case errors.As(err, &fe) && fe.Reactor == nil:
			return fmt.Errorf("--fault: %v (reactor faults apply to a design given by --target or --reactor only)", fe.Wire)
		case err != nil:
			return fmt.Errorf("--fault %v", err)
		case wire != "":
			cell.Load.Faults = append(cell.Load.Faults, spec)
		}
	}
	return nil
}

// measure runs the cell, printing progress on stderr, and reports its
// result; it returns the exit code.
func (f *runFlags) measure(c *cli.Command, cell harness.CellSpec, stdout, stderr io.Writer) int {
	// The first SIGINT or SIGTERM winds the run down: the load generator
	// stops and reports what it measured. Another one a second later or
	// more ends this process (and with it the lab) at once; one sooner is
	// the same signal delivered twice (duplicateWithin).
	intr := onInterrupt()
	defer intr.stop()
	cell.Interrupt = intr.c
	created := missingDirs(cell.Dir)
	progress := newProgressPrinter(stderr, cell.Load)
	res, err := harness.RunCell(context.Background(), cell, progress.report)
	progress.done()
	interrupted := intr.happened()
	if sf := (*target.StartError)(nil); errors.As(err, &sf) && !interrupted {
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
	if code, failed := f.report(c, res, stdout, stderr); failed {
		return code
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

// report writes the result whatever happened: the summary on stdout, or
// with --json - the JSON there and the summary on stderr. failed says it
// could not, and code is then the exit code.
func (f *runFlags) report(c *cli.Command, res *harness.CellResult, stdout, stderr io.Writer) (code int, failed bool) {
	summaryTo := cli.HumanOut(f.json, stdout, stderr)
	if f.json != "" {
		if werr := cli.WriteTo(f.json, stdout, func(w io.Writer) error { return writeJSON(w, res) }); werr != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", werr), true
		}
	}
	if werr := res.WriteSummary(summaryTo, f.spectrum); werr != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", werr), true
	}
	return 0, false
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
// target: one message, startRefusalText; it returns cli.ExitUsage.
func runRefusal(c *cli.Command, stderr io.Writer, cell harness.CellSpec, sf *target.StartError) int {
	if sf.Target == "" {
		sf.Target = cell.Target.String()
	}
	return c.Errorf(stderr, cli.ExitUsage, "%s", startRefusalText(sf))
}

// startRefusalText is how run and matrix refuse a target that could not
// be started: that nothing was measured, sf in target.StartError's words,
// and, on a line of its own, the hint a longer --start-timeout may help
// where it may.
func startRefusalText(sf *target.StartError) string {
	msg := "the target could not be started, so nothing was measured: " + sf.Error()
	if hint := sf.Hint("--start-timeout"); hint != "" {
		msg += "\n" + hint
	}
	return msg
}

// defaultPlacement is the default placement over the CPUs this process may
// use (lab.DefaultPlacement), or no pinning where they cannot be read.
func defaultPlacement() lab.Placement {
	allowed, err := lab.AllowedCPUs()
	if err != nil {
		return lab.Unpinned
	}
	return lab.DefaultPlacement(allowed)
}

// defaultLoopsText says how many loops the load generator runs by default
// with the default placement here: "loadgen on CPU 1: 1 loop", "loadgen
// on CPUs 8-15: up to 8 loops, one per connection beyond".
func defaultLoopsText() string {
	gen := defaultPlacement().Client
	switch n := gen.Len(); {
	case !gen.Pinned():
		return "loadgen unpinned: 1 loop"
	case n == 1:
		return "loadgen on CPU " + gen.String() + ": 1 loop"
	default:
		return fmt.Sprintf("loadgen on CPUs %s: %d loops, fewer with fewer connections", gen, n)
	}
}

// writeJSON writes v to w as indented JSON (the --json output of run and
// footprint).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
