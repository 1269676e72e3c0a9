package main

import (
	"context"
	"errors"
	"io"
	"os/signal"
	"syscall"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/internal/cli"
)

const diagnoseSynopsis = `reactorlab diagnose --pid PID [--for 2s] [--json FILE|-]`

const diagnoseDescription = `Observes a live process for a bounded window (--for, at most 60s) and
says, per thread that behaves like an event loop, what it was doing:
waiting, serving, spinning, blocked (and in what) or starved, each with
the signals that made the conclusion and their figures, and the rules
they were judged by (the method line). It reads /proc (each thread's
stat, status, schedstat, syscall and io; each epoll descriptor's fdinfo)
and the kernel's TCP tables only: the process is never signalled,
stopped or traced. What it could not read (a process of another user)
it says. Prints the report on stdout; --json FILE also writes it as JSON
to FILE, and --json - writes the JSON alone on stdout, the report then
going to stderr. Exit 0: every loop thread waiting or serving; 1: one
spinning, blocked or starved, the process ended within the window, or
no thread's system call could be read (nothing judged); 2: bad flags,
or no such pid; 130: interrupted by SIGINT or SIGTERM.`

// diagnoseCmd is `reactorlab diagnose`: a live process's loop threads,
// classified.
func diagnoseCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab diagnose", diagnoseSynopsis, diagnoseDescription)
	fs := c.Flags
	pid := fs.Int("pid", 0, "the process to observe (`PID`)")
	window := fs.Duration("for", diagnose.DefaultWindow, "how long to observe it ("+diagnose.MinWindow.String()+".."+diagnose.MaxWindow.String()+")")
	jsonOut := fs.String("json", "", "also write the report as JSON to `FILE`; - writes it alone on stdout, and the text on stderr")
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	switch {
	case !c.Set()["pid"]:
		return c.Usagef(stderr, "--pid is required")
	case *pid <= 0:
		return c.Usagef(stderr, "--pid %d: not a process id (want a positive number)", *pid)
	case *window < diagnose.MinWindow || *window > diagnose.MaxWindow:
		return c.Usagef(stderr, "--for %v: out of range %v..%v", *window, diagnose.MinWindow, diagnose.MaxWindow)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := diagnose.Observe(ctx, *pid, diagnose.Options{Window: *window})
	switch {
	case err != nil && ctx.Err() != nil:
		return c.Errorf(stderr, cli.ExitInterrupted, "interrupted, nothing judged: %v", err)
	case errors.Is(err, diagnose.ErrNoProcess):
		return c.Usagef(stderr, "--pid %d: no such process", *pid)
	case err != nil:
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	human := cli.HumanOut(*jsonOut, stdout, stderr)
	if *jsonOut != "" {
		if err := cli.WriteTo(*jsonOut, stdout, func(w io.Writer) error { return writeJSON(w, rep) }); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
	}
	rep.WriteText(human)
	if rep.Sampled == 0 {
		return c.Errorf(stderr, cli.ExitFail, "pid %d: no thread's system call could be read (the report says why): nothing judged", *pid)
	}
	if rep.Findings() > 0 {
		return cli.ExitFail
	}
	return cli.ExitOK
}
