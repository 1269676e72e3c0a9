//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/reactors"
)

// conformTarget turns --target (and --fault, --in-process) into a target.
func conformTarget(spec string, faultSpecs []string, inProcess bool, grace time.Duration) (conformance.Target, error) {
	if command, ok := strings.CutPrefix(spec, "cmd:"); ok {
		if strings.TrimSpace(command) == "" {
			return nil, errors.New("--target cmd: needs a command, e.g. --target cmd:'./server --port {addr}'")
		}
		if len(faultSpecs) > 0 || inProcess {
			return nil, errors.New("--fault and --in-process apply to reference targets only, not to cmd: targets")
		}
		// A simple command is exec'd by the shell, so the server is the
		// direct child: its exit status is its own.
		return conformance.Command{Argv: harness.ShellArgv(command), Grace: grace, Label: command}, nil
	}
	if spec == "" {
		return nil, errors.New("--target is required (accepted: lt, et, oneshot, prio, prio-thread, cmd:'COMMAND')")
	}
	design, err := reactors.ParseDesign(spec)
	if err != nil {
		return nil, fmt.Errorf("--target: %w (or cmd:'COMMAND')", err)
	}
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

func init() {
	harness.RegisterRole(cliRole, func(args []string) int { return run(args, os.Stdout, os.Stderr) })
}

// conformLabBound bounds a whole suite run in the lab: the catalogue takes
// about 3 minutes on 2 cores; a case's own watchdog bounds each case.
const conformLabBound = 30 * time.Minute

// conformInLab runs `reactorlab conform args...` as the only process of a
// lab (harness.LabSpec.Alone): in network, PID and mount namespaces of its
// own, so its traffic is on the lab's loopback and nothing it starts can
// outlive it. Its output is shown when it ends. The exit status is the
// suite's (0, 1 or 2), 130 when interrupted (the suite, sent SIGTERM,
// reports what it had done), or 1 if the lab run itself was not clean.
func conformInLab(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "reactorlab conform: running the suite inside a lab of its own; its output follows when it ends")
	res, err := harness.Run(ctx, harness.LabSpec{
		Client:  harness.Proc{Argv: append([]string{harness.RolePrefix + cliRole, "conform"}, args...)},
		CPUs:    harness.Unpinned,
		Mode:    harness.ModeLab,
		Timeout: conformLabBound,
	})
	if err != nil && res == nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "reactorlab conform: --lab: interrupted: %v\n", err)
			return cli.ExitInterrupted
		}
		fmt.Fprintf(stderr, "reactorlab conform: --lab: %v\n", err)
		return 1
	}
	code := 1
	if c := res.Client; c != nil {
		stdout.Write(c.Stdout)
		io.WriteString(stderr, c.StderrTail)
		if !c.TimedOut && c.Signal == "" {
			code = c.Code
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "reactorlab conform: --lab: interrupted")
		return cli.ExitInterrupted
	}
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: %v\n", err)
		return 1
	}
	var labProblems []string
	for _, why := range res.Invalid {
		// The suite's own verdict (exit status 1: a case failed) is not a
		// problem of the lab's.
		if !strings.HasPrefix(why, "client: exit status") {
			labProblems = append(labProblems, why)
		}
	}
	if len(labProblems) > 0 {
		fmt.Fprintf(stderr, "reactorlab conform: --lab: the run was not clean:\n  %s\n", strings.Join(labProblems, "\n  "))
		return 1
	}
	fmt.Fprintf(stderr, "reactorlab conform: ran in the lab (%d namespaces%s), %v; audit clean\n",
		len(res.Namespaces), map[bool]string{true: ", rootless", false: ""}[res.UserNS], res.Elapsed.Round(time.Second))
	return code
}
