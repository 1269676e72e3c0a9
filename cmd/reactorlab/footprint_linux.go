//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/footprint"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/target"
)

// footprintCmd is `reactorlab footprint`: a server's RSS per idle
// connection.
func footprintCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab footprint", footprintSynopsis, footprintDescription)
	fs := c.Flags
	targetSpec := fs.String("target", "", "what to measure (`DESIGN|cmd:COMMAND`): DESIGN is a reference reactor ("+designs.NameList()+"), run as a child process by this tool's serve command; cmd:COMMAND is any byte-echo server, run by /bin/sh -c (a simple command is exec'd) with REACTORLAB_LISTEN=host:port in its environment and {addr} in its arguments replaced")
	conns := fs.Int("conns", 10000, "idle connections to open, each echoing one 64-byte frame first (1..1000000)")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on the whole measurement, the start included")
	startTimeout := fs.Duration("start-timeout", conformance.DefaultStartTimeout, "bound on the target's start, until it accepts connections")
	jsonOut := fs.String("json", "", "also write the result as JSON to `FILE`; - writes it alone on stdout, and the line on stderr")
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	switch {
	case *conns < 1 || *conns > 1_000_000:
		return c.Usagef(stderr, "--conns %d: out of range 1..1000000", *conns)
	case *timeout <= 0:
		return c.Usagef(stderr, "--timeout %v: must be positive", *timeout)
	case *startTimeout <= 0:
		return c.Usagef(stderr, "--start-timeout %v: must be positive", *startTimeout)
	}
	server, err := conformTarget(*targetSpec, nil, false, 5*time.Second)
	if err != nil {
		return c.Usagef(stderr, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := footprint.Measure(ctx, server, footprint.Options{Conns: *conns, Timeout: *timeout, StartTimeout: *startTimeout})
	var se *target.StartError
	switch {
	case err != nil && ctx.Err() != nil:
		return c.Errorf(stderr, cli.ExitInterrupted, "interrupted, nothing measured: %v", err)
	case errors.As(err, &se):
		return conformRefusal(stderr, "reactorlab footprint", "nothing was measured", se)
	case errors.Is(err, footprint.ErrFdLimit):
		return c.Errorf(stderr, cli.ExitUsage, "%v", err)
	case err != nil:
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	// The line on stdout, or with --json - the JSON there and the line on
	// stderr.
	human := cli.HumanOut(*jsonOut, stdout, stderr)
	if *jsonOut != "" {
		if err := cli.WriteTo(*jsonOut, stdout, func(w io.Writer) error { return writeJSON(w, res) }); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
	}
	fmt.Fprintf(human, "%s: %s: RSS %.1f → %.1f MiB, %.0f bytes per connection (%s open; %v)\n",
		res.Target, figure.Counted(res.Conns, "idle connection", "idle connections"), float64(res.Before)/(1<<20), float64(res.After)/(1<<20), res.PerConn,
		figure.Counted(res.ServerFds, "descriptor", "descriptors"), res.Elapsed.Round(time.Millisecond))
	return cli.ExitOK
}
