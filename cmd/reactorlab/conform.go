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
	"text/tabwriter"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/target"
)

// listFlag is a repeatable flag that also splits on commas. A value that
// names nothing ("", ",") is refused: a selection given but empty must not
// read as no selection (the default, everything).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	n := len(*l)
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	if len(*l) == n {
		return errors.New("names nothing (give one or more, comma-separated, or leave the flag out)")
	}
	return nil
}

// countOf is "1 case", "2 cases": n and noun, plural unless n is 1.
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

const conformSynopsis = `reactorlab conform --target DESIGN|cmd:'COMMAND' [--case ID,...] [--json FILE|-] [--junit FILE|-] [flags]
reactorlab conform --list`

const conformDescription = `Runs the conformance catalogue, or the cases --case names, against a
target: a reference reactor (DESIGN, one of those --target lists) or
any server given as cmd:'COMMAND', which must serve a TCP byte echo on the
address in REACTORLAB_LISTEN (or {addr} in its arguments). A cmd target
is also given a control address, in REACTORLAB_CONTROL_LISTEN and as
{control} in its arguments; one that serves a byte echo there too ({control}
in the command, or --control) is waited for on both, and S2 sends its
PINGs there. With --stop sigterm the cases of the stop contract run (X3,
X4, X5, on cmd and reference targets alike): after SIGTERM the server
refuses new connections, answers what it has read and closes every
connection with FIN, not RST, within --stop-grace. The target is
started once first: a program that is missing, exits at once or does not
listen within --start-timeout is refused, with the end of its stderr, and
nothing is run. Each case then runs alone on a fresh instance. The table
of verdicts, with every failure's evidence, goes to stdout, or to stderr
when --json - or --junit - puts that document alone on stdout; progress
goes to stderr. Exit 0: nothing failed (nor was inconclusive, with
--strict, unless the server's design never offers the case's
precondition: "inconclusive (the server's design)", the same every
run); 1: a case failed, or the target ended badly (a crash, an
exit status other than 0 or 143, a kill after the grace) when it was
stopped after a case, which is reported apart from that case's verdict;
2: bad flags, or the target could not be
started; 130: interrupted by SIGINT or SIGTERM (the case then running is
reported interrupted, the others not run, and the reports say so).`

// conformFlags are conform's flags, once parsed.
type conformFlags struct {
	target                string
	cases, faults         listFlag
	jsonPath, junitPath   string
	list, inProcess       bool
	timeout, startTimeout time.Duration
	verbose, strict       bool
	grace                 time.Duration
	inLab                 bool
	control               bool
	stop                  string
	stopGrace             time.Duration
	retries               int
}

// stopContract is --stop as conformance takes it: "" for none.
func (f *conformFlags) stopContract() conformance.StopContract {
	if f.stop == "none" {
		return ""
	}
	return conformance.StopContract(f.stop)
}

// define defines the flags in fs.
func (f *conformFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.target, "target", "", "what to test (`DESIGN|cmd:COMMAND`): DESIGN is a reference reactor ("+designs.NameList()+"); cmd:COMMAND is any server, run by /bin/sh -c (a simple command is exec'd) with REACTORLAB_LISTEN=host:port in its environment and {addr} in its arguments replaced; it must serve a TCP byte echo there (its control address comes the same way: REACTORLAB_CONTROL_LISTEN, {control})")
	fs.Var(&f.cases, "case", "`IDS` to run: case ids or group letters, repeatable or comma-separated (default: the whole catalogue; --list shows it)")
	fs.Var(&f.faults, "fault", "reference targets only: run a mutant with reactor `FAULT`, repeatable: "+strings.Join(reactors.FaultNames, ", "))
	fs.StringVar(&f.jsonPath, "json", "", "also write the results as JSON to `FILE` (- for stdout, which then holds only the JSON)")
	fs.StringVar(&f.junitPath, "junit", "", "also write the results as JUnit XML to `FILE` (- for stdout, which then holds only the XML)")
	fs.BoolVar(&f.list, "list", false, "print the catalogue and exit")
	fs.BoolVar(&f.inProcess, "in-process", false, "reference targets only: run the reactor inside this process instead of as a child process (R4 is then skipped)")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound on each case, the start of its fresh instance included (0: the case's own bound)")
	fs.DurationVar(&f.startTimeout, "start-timeout", conformance.DefaultStartTimeout, "bound on each start of the target, until it accepts connections: the check before any case, and every case's")
	fs.BoolVar(&f.verbose, "v", false, "show every case's log and evidence, not only the failures'")
	fs.BoolVar(&f.strict, "strict", false, "exit 1 when a case is inconclusive too (a precondition could not be established), not only when one fails; an inconclusive the server's design explains (the same every run) does not")
	fs.DurationVar(&f.grace, "grace", 5*time.Second, "cmd targets: time between SIGTERM and SIGKILL when stopping the command")
	fs.BoolVar(&f.control, "control", false, "cmd targets: the command serves a byte echo on the control address in REACTORLAB_CONTROL_LISTEN too (implied when the command has {control}): S2 sends its PINGs there under hot data")
	fs.StringVar(&f.stop, "stop", "none", "the stop contract to hold the target to (`none|sigterm`): sigterm runs X3, X4, X5 (after SIGTERM: each echo stream a prefix of what was sent, ending in FIN, not RST; every connection closed within --stop-grace; new connections refused); none skips them")
	fs.DurationVar(&f.stopGrace, "stop-grace", conformance.DefaultStopGrace, "with --stop sigterm: how long the target may take after SIGTERM to answer what it has read and close every connection")
	fs.IntVar(&f.retries, "retries", 0, "run a case that ended inconclusive again, on a fresh instance, up to `N` more times (at most "+fmt.Sprint(maxConformRetries)+"), keeping the first conclusive verdict: for a busy machine, where a precondition is a draw of timing; a failure, a pass and an inconclusive the server's design explains are never run again")
	fs.BoolVar(&f.inLab, "lab", false, "run the whole suite inside a lab of its own (new network, PID and mount namespaces; rootless where needed): isolated from the host's traffic and ports, and nothing it starts outlives it; refused where namespaces are")
}

// maxConformRetries bounds --retries: a case run four times is still
// within the run's bound in the lab (conformLabBound).
const maxConformRetries = 3

// conflict is the usage error of flags that do not go together or are
// out of range, or "".
func (f *conformFlags) conflict() string {
	switch {
	case f.jsonPath == cli.StdoutPath && f.junitPath == cli.StdoutPath:
		return "--json - and --junit - both want stdout: write one of them to a file"
	case f.timeout < 0:
		return fmt.Sprintf("--timeout %v: must not be negative (0: each case's own bound)", f.timeout)
	case f.startTimeout <= 0:
		return fmt.Sprintf("--start-timeout %v: must be positive", f.startTimeout)
	case f.grace <= 0:
		return fmt.Sprintf("--grace %v: must be positive", f.grace)
	case f.stop != "none" && f.stop != string(conformance.StopSIGTERM):
		return fmt.Sprintf("--stop %q (accepted: none, sigterm)", f.stop)
	case f.stopGrace <= 0 || f.stopGrace > time.Hour:
		return fmt.Sprintf("--stop-grace %v: must be in (0, 1h]", f.stopGrace)
	case f.retries < 0 || f.retries > maxConformRetries:
		return fmt.Sprintf("--retries %d: out of range 0..%d", f.retries, maxConformRetries)
	}
	return ""
}

// conform is `reactorlab conform`: check the flags and the target, then
// run the suite here (runConform) or in a lab of its own (conformInLab).
func conform(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab conform", conformSynopsis, conformDescription)
	var f conformFlags
	f.define(c.Flags)
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	if f.list {
		printCatalogue(stdout)
		return cli.ExitOK
	}
	selected, err := cases.Select(f.cases)
	if err != nil {
		return c.Usagef(stderr, "--case: %v", err)
	}
	if msg := f.conflict(); msg != "" {
		return c.Usagef(stderr, "%s", msg)
	}
	target, err := conformTarget(f.target, f.faults, f.inProcess, f.grace)
	if err != nil {
		return c.Usagef(stderr, "%v", err)
	}
	if f.control {
		cmd, ok := target.(conformance.Command)
		if !ok {
			return c.Usagef(stderr, "--control applies to cmd: targets only (a reference reactor always serves its control address)")
		}
		cmd.Control = true
		target = cmd
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.inLab {
		var files []string
		for _, p := range []string{f.jsonPath, f.junitPath} {
			if p != "" && p != cli.StdoutPath {
				files = append(files, p)
			}
		}
		return conformInLab(ctx, withoutFlag(args, "lab"), f.grace, files, stdout, stderr)
	}
	// The table is for a person: on stderr when stdout holds a document.
	human := stdout
	if f.jsonPath == cli.StdoutPath || f.junitPath == cli.StdoutPath {
		human = stderr
	}
	rep := conformReport{c: c, f: &f, target: target.Name(), human: human, stdout: stdout, stderr: stderr}
	return runConform(ctx, target, selected, &f, rep)
}

// runConform starts target once before any case (one that cannot start
// is one refusal, not a failure per case), then runs the selected cases
// and reports them.
func runConform(ctx context.Context, target conformance.Target, selected []conformance.Case, f *conformFlags, rep conformReport) int {
	stderr := rep.stderr
	t0 := time.Now()
	if err := conformance.CheckStart(ctx, target, f.startTimeout); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "reactorlab conform: interrupted while starting %s: no case was run\n", target.Name())
			var results []conformance.Result
			for _, cs := range selected {
				results = append(results, conformance.Result{ID: cs.ID, Title: cs.Title, Verdict: conformance.NotRun, Reason: "not run: the run was interrupted before it"})
			}
			return rep.report(results)
		}
		return conformRefusal(stderr, "reactorlab conform", "no case was run", err)
	}
	fmt.Fprintf(stderr, "reactorlab conform: %s started and listening (checked in %v); %s\n",
		target.Name(), time.Since(t0).Round(time.Millisecond), countOf(len(selected), "case"))
	results, err := conformance.RunAll(ctx, target, selected, conformance.Options{Timeout: f.timeout,
		StartTimeout: f.startTimeout, NoStartCheck: true, Stop: f.stopContract(), StopGrace: f.stopGrace,
		Retries: f.retries,
		Progress: func(r conformance.Result) {
			verdict := string(r.Verdict)
			if r.Attempts > 1 {
				verdict += fmt.Sprintf(" (attempt %d)", r.Attempts)
			}
			fmt.Fprintf(stderr, "  %-3s %-12s %v\n", r.ID, verdict, r.Duration.Round(time.Millisecond))
		}})
	if err != nil {
		return rep.c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	if sum := conformance.Summarize(results); sum.WasInterrupted() {
		fmt.Fprintf(stderr, "reactorlab conform: interrupted: %s finished, %d interrupted, %d not run\n",
			countOf(len(results)-sum.Interrupted-sum.NotRun, "case"), sum.Interrupted, sum.NotRun)
	}
	return rep.report(results)
}

// conformReport writes a suite's results: the table to human, the
// --json and --junit documents where the flags say.
type conformReport struct {
	c                     *cli.Command
	f                     *conformFlags
	target                string
	human, stdout, stderr io.Writer
}

// report writes the results and returns the exit code they make: 130
// interrupted, 1 a failure, a target that ended badly when stopped (or,
// with --strict, an inconclusive case the server's design does not
// explain), else 0.
func (r conformReport) report(results []conformance.Result) int {
	if err := conformance.WriteTable(r.human, r.target, results, r.f.verbose); err != nil {
		return r.c.Errorf(r.stderr, cli.ExitFail, "%v", err)
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer, string, []conformance.Result) error
	}{{r.f.jsonPath, conformance.WriteJSON}, {r.f.junitPath, conformance.WriteJUnit}} {
		if out.path == "" {
			continue
		}
		if err := cli.WriteTo(out.path, r.stdout, func(w io.Writer) error { return out.write(w, r.target, results) }); err != nil {
			return r.c.Errorf(r.stderr, cli.ExitFail, "%v", err)
		}
	}
	sum := conformance.Summarize(results)
	switch {
	case sum.WasInterrupted():
		return cli.ExitInterrupted
	case sum.Fail > 0 || sum.StopFindings > 0 || r.f.strict && sum.Inconclusive > sum.ByDesign:
		return cli.ExitFail
	}
	return cli.ExitOK
}

// conformRefusal writes the one message for a target that could not be
// started (err from conformance.CheckStart or StartInstance), with a hint
// where a longer --start-timeout may help, and returns cli.ExitUsage.
func conformRefusal(stderr io.Writer, name, nothing string, err error) int {
	msg := fmt.Sprintf("%s: the target could not be started, so %s: %v", name, nothing, err)
	var se *target.StartError
	if errors.As(err, &se) {
		if hint := se.Hint("--start-timeout"); hint != "" {
			msg += "\n" + hint
		}
	}
	fmt.Fprintln(stderr, msg)
	return cli.ExitUsage
}

// withoutFlag returns args without the boolean flag name in any of the
// forms the flag package accepts (-name, --name, --name=value).
func withoutFlag(args []string, name string) []string {
	var out []string
	for _, a := range args {
		if a == "--" {
			break
		}
		bare := strings.TrimLeft(a, "-")
		if strings.HasPrefix(a, "-") && (bare == name || strings.HasPrefix(bare, name+"=")) {
			continue
		}
		out = append(out, a)
	}
	return out
}

func printCatalogue(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range cases.Catalogue() {
		fmt.Fprintf(tw, "%s\t%s\n", c.ID, c.Title)
		fmt.Fprintf(tw, "\tclaim: %s\n", c.Claim)
		fmt.Fprintf(tw, "\tbound: %s\n", c.Bound)
		if len(c.Mutants) > 0 {
			fmt.Fprintf(tw, "\tmust fail: %s\n", strings.Join(c.Mutants, ", "))
		}
		if len(c.BlackBoxBugs) > 0 {
			fmt.Fprintf(tw, "\tmust fail (examples/echo --bug): %s\n", strings.Join(c.BlackBoxBugs, ", "))
		}
		if len(c.WireFaults) > 0 {
			fmt.Fprintf(tw, "\twire faults: %s\n", strings.Join(c.WireFaults, ", "))
		}
		if n := c.NeedsText(); n != "" {
			fmt.Fprintf(tw, "\tneeds: %s (skipped on a target without it)\n", n)
		}
	}
	tw.Flush()
}
