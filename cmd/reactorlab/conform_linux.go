//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/target"
)

// conformTarget turns --target (and --fault, --in-process) into a target.
func conformTarget(spec string, faultSpecs []string, inProcess bool, grace time.Duration) (conformance.Target, error) {
	if spec == "" {
		return nil, fmt.Errorf("--target is required (accepted: %s)", target.Accepted(designs.Names()))
	}
	t, err := target.Parse(spec, designs.Names())
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	if t.IsCommand() {
		if len(faultSpecs) > 0 || inProcess {
			return nil, errors.New("--fault and --in-process apply to reference targets only, not to cmd: targets")
		}
		// A simple command is exec'd by the shell, so the server is the
		// direct child: its exit status is its own.
		return conformance.Command{Argv: harness.ShellArgv(t.Command()), Grace: grace, Label: t.Command()}, nil
	}
	design := reactors.DesignName(t.Design())
	cfg := reactors.DefaultConfig()
	for _, f := range faultSpecs {
		if err := reactors.ParseFault(f, &cfg.Faults); err != nil {
			return nil, fmt.Errorf("--fault: %w", err)
		}
	}
	if inProcess {
		return conformance.InProcess{Design: design, Config: &cfg}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable to run reference reactors: %w", err)
	}
	return conformance.Process{Design: design, Config: &cfg, Command: []string{exe}}, nil
}

// cliRole is this command run as a child of the harness: `conform --lab`
// runs the suite as this role inside the lab.
const cliRole = "cli"

func init() { lab.RegisterRole(cliRole, cliRoleMain) }

// cliRoleMain runs `reactorlab ARGS...` as the cli role. Leading
// --stdout=FILE and --stderr=FILE (existing files, appended to) take the
// command's stdout and stderr in place of the process's: the harness keeps
// only the end of a child's stderr (and a bounded stdout), while a file in
// a directory the lab shares keeps all of it. The process's own stderr
// still gets what the command does not write (a runtime crash).
func cliRoleMain(args []string) int {
	stdout, stderr := io.Writer(os.Stdout), io.Writer(os.Stderr)
	for len(args) > 0 {
		name, path, ok := strings.Cut(args[0], "=")
		if !ok || name != "--stdout" && name != "--stderr" {
			break
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "reactorlab: role %s: %s: %v\n", cliRole, name, err)
			return cli.ExitFail
		}
		defer f.Close()
		if name == "--stdout" {
			stdout = f
		} else {
			stderr = f
		}
		args = args[1:]
	}
	return run(args, stdout, stderr)
}

// conformLabBound bounds a whole suite run in the lab: the catalogue takes
// about 3 minutes on 2 cores; a case's own watchdog bounds each case.
const conformLabBound = 30 * time.Minute

// conformLabStopReserve is the time the suite in the lab has, beyond
// --grace (its wait for a cmd target to exit after SIGTERM), to wind down
// when interrupted: end the case then running, stop its target and write
// its reports. Past it the lab kills the suite, and its report is lost.
// A variable so that a test can make the suite miss it.
var conformLabStopReserve = 10 * time.Second

// conformTailEvery is how often the suite's stderr file is copied on.
const conformTailEvery = 100 * time.Millisecond

// conformInLab runs `reactorlab conform args...` as the only process of a
// lab (lab.Spec.Alone): in network, PID and mount namespaces of its
// own, so its traffic is on the lab's loopback and nothing it starts can
// outlive it. Its stderr (progress, notes, and the table with --json - or
// --junit -) is copied to stderr as it runs, all of it, through a file in
// a directory of its own; its stdout, also a file, is copied to stdout
// when it ends.
//
// When ctx ends (SIGINT or SIGTERM) the suite is sent SIGTERM
// (lab.Spec.Interrupt): it reports what it had done, as outside the lab,
// if it does so within grace plus conformLabStopReserve; otherwise it is
// killed and this says its report was lost, and that reportFiles (the
// --json and --junit files it was to write) may not hold it.
//
// The exit status is the suite's (0 or 1; 2, its refusal alone, when the
// target could not be started; 130 when it was interrupted), 130 whenever
// ctx ended and the suite did not finish, or 1 if the lab run itself went
// wrong: its audit found something left behind, the suite crashed or ran
// out of conformLabBound. "ran in the lab ...; audit clean" is said only
// after the suite ran.
func conformInLab(ctx context.Context, args []string, grace time.Duration, reportFiles []string, stdout, stderr io.Writer) int {
	dir, err := os.MkdirTemp("", "reactorlab-conform-lab-")
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: %v\n", err)
		return cli.ExitFail
	}
	defer os.RemoveAll(dir)
	outPath, errPath := filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	errFile, err := createLabOutputs(outPath, errPath)
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: %v\n", err)
		return cli.ExitFail
	}
	defer errFile.Close()
	stopTail := tailInto(stderr, errFile)

	labGrace := grace + conformLabStopReserve
	// Run's own context only bounds it: cancelling it would kill the suite
	// at once, before it could report. A signal winds the suite down.
	res, err := lab.Run(context.Background(), lab.Spec{
		Client: lab.Proc{Argv: append([]string{lab.RolePrefix + cliRole,
			"--stdout=" + outPath, "--stderr=" + errPath, "conform"}, args...)},
		Placement: lab.Unpinned,
		Mode:      lab.ModeLab,
		Timeout:   conformLabBound,
		Grace:     labGrace,
		Interrupt: ctx.Done(),
	})
	stopTail()
	if out, rerr := os.ReadFile(outPath); rerr != nil {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: the suite's stdout: %v\n", rerr)
	} else {
		stdout.Write(out)
	}
	interrupted := ctx.Err() != nil
	if res == nil {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: %v\n", err)
		return cli.ExitFail
	}
	c := res.Client
	if c != nil && c.StderrTail != "" {
		// What the suite did not write itself: a crash's trace, say.
		io.WriteString(stderr, c.StderrTail)
	}
	o := judgeLabRun(res, err, interrupted, labGrace, reportFiles, stderr)
	return o.report(res, stderr)
}

// createLabOutputs creates the files that take the suite's stdout and
// stderr (new, in that order), and returns the stderr file, open: read
// from as the suite writes, and open across the run, so the audit sees it
// before and after.
func createLabOutputs(outPath, errPath string) (*os.File, error) {
	var errFile *os.File
	for _, p := range []string{outPath, errPath} {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, err
		}
		if p == errPath {
			errFile = f
		} else {
			f.Close()
		}
	}
	return errFile, nil
}

// tailInto copies what is written to f onto w, every conformTailEvery,
// until the function it returns is called: that copies the rest and
// returns when the copying has ended.
func tailInto(w io.Writer, f *os.File) (stop func()) {
	stopTail, tailed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(tailed)
		copyNew := func() { io.Copy(w, onlyReader{f}) }
		t := time.NewTicker(conformTailEvery)
		defer t.Stop()
		for {
			copyNew()
			select {
			case <-stopTail:
				copyNew()
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(stopTail)
		<-tailed
	}
}

// labOutcome is what became of a suite run in the lab: the exit code,
// why its report is lost ("" if it is not), and what was not clean.
type labOutcome struct {
	code     int
	lost     string
	problems []string
}

// judgeLabRun judges the lab run res (err from lab.Run; interrupted:
// a signal came) by how the suite ended. A lab that could not be set up is
// said on stderr here.
func judgeLabRun(res *lab.Result, err error, interrupted bool, labGrace time.Duration, reportFiles []string, stderr io.Writer) labOutcome {
	c := res.Client
	var problems []string
	for _, d := range res.Audit.Diffs {
		problems = append(problems, "leak audit: "+d)
	}
	lost := ""
	code := cli.ExitFail
	switch {
	case c == nil && interrupted:
		lost = "interrupted before the suite started: no case was run, and no report was written"
		code = cli.ExitInterrupted
	case c == nil:
		// The lab could not be set up (or refused): the suite never ran.
		if err == nil {
			err = errors.New("the suite was never started")
		}
		fmt.Fprintf(stderr, "reactorlab conform: --lab: %v\n", err)
	case c.TimedOut:
		problems = append([]string{fmt.Sprintf("the suite did not finish within %v and was stopped (%s): its report is incomplete or lost", conformLabBound, exitText(c))}, problems...)
		if interrupted {
			code = cli.ExitInterrupted
		}
	case c.Signal != "" && interrupted:
		lost = fmt.Sprintf("interrupted: the suite did not wind down within %v of SIGTERM and was killed (%s): its report is lost", labGrace, exitText(c))
		if len(reportFiles) > 0 {
			lost += fmt.Sprintf(" (%s may be missing, incomplete or an earlier run's)", strings.Join(reportFiles, " and "))
		}
		code = cli.ExitInterrupted
	case c.Signal != "":
		problems = append([]string{fmt.Sprintf("the suite was ended by a signal (%s): its report is incomplete or lost", exitText(c))}, problems...)
	default:
		// The suite ended by itself: its report is whole, and its status
		// agrees with it (130 if it was interrupted, else its verdict, even
		// if a signal came after its last case).
		code = c.Code
		// The suite's own verdict and an interruption it reported are not
		// problems of the lab's; anything else Run failed with is.
		if err != nil && !interrupted {
			problems = append([]string{err.Error()}, problems...)
		}
	}
	return labOutcome{code: code, lost: lost, problems: problems}
}

// report says on stderr what was lost and what was not clean, or that the
// suite ran in the lab and its audit was clean, and returns the exit code.
func (o labOutcome) report(res *lab.Result, stderr io.Writer) int {
	if o.lost != "" {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: %s\n", o.lost)
	}
	if len(o.problems) > 0 {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: the run was not clean:\n  %s\n", strings.Join(o.problems, "\n  "))
		if o.code == cli.ExitInterrupted {
			return o.code
		}
		return cli.ExitFail
	}
	if res.Client == nil || o.lost != "" || o.code == cli.ExitUsage {
		// Said already; and a refusal is the suite's one message: no case
		// ran, so the lab has nothing to add.
		return o.code
	}
	fmt.Fprintf(stderr, "reactorlab conform: ran in the lab (%d namespaces%s), %v; audit clean\n",
		len(res.Namespaces), map[bool]string{true: ", rootless", false: ""}[res.UserNS], res.Elapsed.Round(time.Second))
	return o.code
}

// exitText says how a process ended: "exit status 1", "signal: killed".
func exitText(p *lab.ProcResult) string {
	if p.Signal != "" {
		return "signal: " + p.Signal
	}
	return fmt.Sprintf("exit status %d", p.Code)
}

// onlyReader hides an *os.File's WriteTo, so that io.Copy reads it with
// plain reads from its offset to its current end.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
