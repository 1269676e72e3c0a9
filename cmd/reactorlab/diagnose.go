package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

const diagnoseSynopsis = `reactorlab diagnose --pid PID [--for 2s] [--json FILE|-]
reactorlab diagnose --target DESIGN|cmd:'COMMAND' [--hot N] [--steady N --rate R] [--for 2s] [--json FILE|-]`

const diagnoseDescription = `Observes a live process for a bounded window (--for, at most 60s) and
says, per thread that behaves like an event loop, what it was doing:
waiting, serving, spinning, waking itself, blocked (and in what) or
starved, each with
the signals that made the conclusion and their figures, and the rules
they were judged by (the method line). It reads /proc (each thread's
stat, status, schedstat, syscall and io; each epoll descriptor's fdinfo)
and the kernel's TCP tables only: the process is never signalled,
stopped or traced. What it could not read (a process of another user)
it says. Prints the report on stdout; --json FILE also writes it as JSON
to FILE, and --json - writes the JSON alone on stdout, the report then
going to stderr.

--target starts the process instead, as conform starts one (a reference
reactor, a mutant of it with --fault, or cmd:'COMMAND' serving a byte
echo on REACTORLAB_LISTEN or {addr}), waits until it accepts
connections, puts on it the load --hot and --steady ask for (as run's
flags; none by default) for 0.5s before the window and through it, observes
every process of it that holds its listener, then stops it (SIGTERM,
SIGKILL after --grace) and says how it ended. Its JSON holds the target,
the load's totals, a report per serving process and how it stopped.

Exit 0: every loop thread waiting or serving; 1: one spinning, waking
itself, blocked or starved, the process ended within the window, no thread's system
call could be read (nothing judged), or the load could not be put on
the target; 2: bad flags, no such pid, or a target that could not be
started (a missing program, one that exits or does not listen within
--start-timeout, its address taken by another process); 130:
interrupted by SIGINT or SIGTERM. How a started target ends at its stop
(an exit status that answers the SIGTERM, a crash, a kill after the
grace) is said, never counted as a finding.`

// diagnoseFlags are diagnose's flags, once parsed.
type diagnoseFlags struct {
	pid                 int
	target              string
	faults              listFlag
	window              time.Duration
	jsonOut             string
	startTimeout, grace time.Duration
	load                loadgen.Config
}

// diagnoseLoadFlags are the load flags diagnose takes from run's (the
// same names, meanings and checks): hot and steady sources.
var diagnoseLoadFlags = []string{"hot", "inflight", "steady", "rate", "payload"}

// define defines the flags in fs.
func (f *diagnoseFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&f.pid, "pid", 0, "the process to observe (`PID`)")
	fs.StringVar(&f.target, "target", "", "start this target and observe it (`DESIGN|cmd:COMMAND`): DESIGN is a reference reactor ("+designs.NameList()+"); cmd:COMMAND is any server, run by /bin/sh -c with REACTORLAB_LISTEN=host:port in its environment and {addr} in its arguments replaced")
	fs.Var(&f.faults, "fault", "--target DESIGN only: run a mutant with reactor `FAULT`, repeatable: "+strings.Join(reactors.FaultNames, ", "))
	fs.DurationVar(&f.window, "for", diagnose.DefaultWindow, "how long to observe it ("+diagnose.MinWindow.String()+".."+diagnose.MaxWindow.String()+")")
	fs.StringVar(&f.jsonOut, "json", "", "also write the report as JSON to `FILE`; - writes it alone on stdout, and the text on stderr")
	fs.DurationVar(&f.startTimeout, "start-timeout", conformance.DefaultStartTimeout, "--target: how long it may take to accept connections; one that does not is refused (exit 2)")
	fs.DurationVar(&f.grace, "grace", 5*time.Second, "--target: time between SIGTERM and SIGKILL when stopping it")
	for _, name := range diagnoseLoadFlags {
		k, _ := loadgen.LookupKnob(name)
		if name == "hot" {
			// No load unless one is asked for: run's default is 1.
			fs.IntVar(&f.load.Hot, name, 0, "--target: "+k.Help+", as run takes it (0: none)")
			continue
		}
		k.AddFlag(fs, &f.load, "--target: "+k.Help+", as run takes it")
	}
}

// diagnoseCmd is `reactorlab diagnose`: a live process's loop threads,
// classified; with --target, a process it starts, loads and stops.
func diagnoseCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab diagnose", diagnoseSynopsis, diagnoseDescription)
	var f diagnoseFlags
	f.define(c.Flags)
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	if msg := f.conflict(c.Set()); msg != "" {
		return c.Usagef(stderr, "%s", msg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.target != "" {
		return diagnoseTarget(ctx, c, &f, stdout, stderr)
	}
	rep, err := diagnose.Observe(ctx, f.pid, diagnose.Options{Window: f.window})
	switch {
	case err != nil && ctx.Err() != nil:
		return c.Errorf(stderr, cli.ExitInterrupted, "interrupted, nothing judged: %v", err)
	case errors.Is(err, diagnose.ErrNoProcess):
		return c.Usagef(stderr, "--pid %d: no such process", f.pid)
	case err != nil:
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	human := cli.HumanOut(f.jsonOut, stdout, stderr)
	if f.jsonOut != "" {
		if err := cli.WriteTo(f.jsonOut, stdout, func(w io.Writer) error { return writeJSON(w, rep) }); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
	}
	rep.WriteText(human)
	if rep.Sampled == 0 {
		return c.Errorf(stderr, cli.ExitFail, "pid %d: no thread's system call could be read (the report says why): nothing judged", f.pid)
	}
	if rep.Findings() > 0 {
		return cli.ExitFail
	}
	return cli.ExitOK
}

// conflict is the usage error of flags that do not go together or are
// out of range (set: the flags given), or "".
func (f *diagnoseFlags) conflict(set map[string]bool) string {
	loaded := ""
	for _, name := range diagnoseLoadFlags {
		if set[name] {
			loaded = name
		}
	}
	switch {
	case set["pid"] == (f.target != ""):
		return "give one of --pid (a live process) and --target (one to start)"
	case set["pid"] && f.pid <= 0:
		return fmt.Sprintf("--pid %d: not a process id (want a positive number)", f.pid)
	case f.window < diagnose.MinWindow || f.window > diagnose.MaxWindow:
		return fmt.Sprintf("--for %v: out of range %v..%v", f.window, diagnose.MinWindow, diagnose.MaxWindow)
	case f.target != "":
		return f.targetConflict()
	case loaded != "" || set["fault"] || set["start-timeout"] || set["grace"]:
		return "--hot, --inflight, --steady, --rate, --payload, --fault, --start-timeout and --grace apply to --target only: diagnose puts no load on, and never stops, a process it did not start"
	}
	return ""
}

// targetConflict is the usage error of --target's own flags, or "".
func (f *diagnoseFlags) targetConflict() string {
	switch {
	case f.startTimeout <= 0:
		return fmt.Sprintf("--start-timeout %v: must be positive", f.startTimeout)
	case f.grace <= 0:
		return fmt.Sprintf("--grace %v: must be positive", f.grace)
	case f.loaded():
		if err := roles.CheckLoad(f.loadConfig("127.0.0.1:1")); err != nil {
			return err.Error()
		}
	}
	return ""
}

// diagnoseLoadLead is how long the load runs before the window opens:
// its connections made on loopback (milliseconds) and its first frames
// answered, so the window sees the target under it.
const diagnoseLoadLead = 500 * time.Millisecond

// loaded reports whether the flags ask for load: a hot or steady source.
func (f *diagnoseFlags) loaded() bool { return f.load.Hot > 0 || f.load.Steady > 0 }

// loadConfig is the load the flags ask for on addr: no control probes
// (a black box has no control address), sending for diagnoseLoadLead and
// the window, and a second more, so it outlasts the observation, which
// cancels it.
func (f *diagnoseFlags) loadConfig(addr string) loadgen.Config {
	cfg := f.load
	cfg.DataAddr, cfg.ControlEvery = addr, 0
	cfg.Warmup, cfg.Duration = diagnoseLoadLead, f.window+time.Second
	return cfg
}
