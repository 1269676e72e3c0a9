//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/footprint"
)

// footprintCmd is `reactorlab footprint`: a server's RSS per idle
// connection.
func footprintCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reactorlab footprint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	targetSpec := fs.String("target", "", "what to measure: lt, et, oneshot, prio, prio-thread (a reference reactor, run by `reactorlab serve`), or cmd:'COMMAND' (any byte-echo server, run by /bin/sh -c, a simple command with exec, with REACTORLAB_LISTEN=host:port and {addr} replaced)")
	conns := fs.Int("conns", 10000, "idle connections to open, each echoing one 64-byte frame first (1..1000000)")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on the whole measurement")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "reactorlab footprint: unexpected argument %q (quote a cmd: target's command)\n", fs.Arg(0))
		return exitUsage
	}
	if *conns < 1 || *conns > 1_000_000 {
		fmt.Fprintf(stderr, "reactorlab footprint: --conns %d out of range 1..1000000\n", *conns)
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "reactorlab footprint: --timeout %v must be positive\n", *timeout)
		return exitUsage
	}
	target, err := conformTarget(*targetSpec, nil, false, 5*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab footprint: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := footprint.Measure(ctx, target, footprint.Options{Conns: *conns, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab footprint: %v\n", err)
		return 1
	}
	if *asJSON {
		if err := writeJSON(stdout, res); err != nil {
			fmt.Fprintf(stderr, "reactorlab footprint: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "%s: %d idle connections: RSS %.1f → %.1f MiB, %.0f bytes per connection (%d descriptors open; %v)\n",
		res.Target, res.Conns, float64(res.Before)/(1<<20), float64(res.After)/(1<<20), res.PerConn, res.ServerFds, res.Elapsed.Round(time.Millisecond))
	return 0
}
