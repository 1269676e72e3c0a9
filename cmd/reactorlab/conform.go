package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// listFlag is a repeatable flag that also splits on commas.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

func conform(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reactorlab conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	targetSpec := fs.String("target", "", "what to test: lt, et, oneshot, prio, prio-thread (a reference reactor), or cmd:'COMMAND' (any server, run by /bin/sh -c, a simple command with exec, with REACTORLAB_LISTEN=host:port and {addr} replaced; it must serve a TCP byte echo there)")
	var cases, faultSpecs listFlag
	fs.Var(&cases, "case", "case id or group letter to run, repeatable or comma-separated (default: the whole catalogue; --list shows it)")
	fs.Var(&faultSpecs, "fault", "reference targets only: run a mutant, repeatable: "+strings.Join(reactors.FaultNames, ", "))
	jsonPath := fs.String("json", "", "also write the results as JSON to this file (- for stdout)")
	junitPath := fs.String("junit", "", "also write the results as JUnit XML to this file (- for stdout)")
	list := fs.Bool("list", false, "print the catalogue and exit")
	inProcess := fs.Bool("in-process", false, "reference targets only: run the reactor inside this process instead of as a child process (R4 is then skipped)")
	timeout := fs.Duration("timeout", 0, "bound on each case (0: the case's own bound)")
	verbose := fs.Bool("v", false, "show every case's log and evidence, not only the failures'")
	strict := fs.Bool("strict", false, "exit 1 when a case is inconclusive too (a precondition could not be established), not only when one fails")
	grace := fs.Duration("grace", 5*time.Second, "cmd targets: time between SIGTERM and SIGKILL when stopping the command")
	inLab := fs.Bool("lab", false, "run the whole suite inside a lab of its own (new network, PID and mount namespaces; rootless where needed): isolated from the host's traffic and ports, and nothing it starts outlives it; refused where namespaces are")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "reactorlab conform: unexpected argument %q (quote a cmd: target's command)\n", fs.Arg(0))
		return exitUsage
	}
	if *list {
		printCatalogue(stdout)
		return 0
	}
	selected, err := conformance.Select(cases)
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab conform: --case: %v\n", err)
		return exitUsage
	}
	target, err := conformTarget(*targetSpec, faultSpecs, *inProcess, *grace)
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab conform: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *inLab {
		return conformInLab(ctx, withoutFlag(args, "lab"), stdout, stderr)
	}
	fmt.Fprintf(stderr, "reactorlab conform: %s, %d cases\n", target.Name(), len(selected))
	results, err := conformance.RunAll(ctx, target, conformance.Options{Cases: cases, Timeout: *timeout,
		Progress: func(r conformance.Result) {
			fmt.Fprintf(stderr, "  %-3s %-12s %v\n", r.ID, r.Verdict, r.Duration.Round(time.Millisecond))
		}})
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab conform: %v\n", err)
		return 1
	}
	if err := conformance.WriteTable(stdout, target.Name(), results, *verbose); err != nil {
		fmt.Fprintf(stderr, "reactorlab conform: %v\n", err)
		return 1
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer, string, []conformance.Result) error
	}{{*jsonPath, conformance.WriteJSON}, {*junitPath, conformance.WriteJUnit}} {
		if out.path == "" {
			continue
		}
		if err := writeTo(out.path, stdout, func(w io.Writer) error { return out.write(w, target.Name(), results) }); err != nil {
			fmt.Fprintf(stderr, "reactorlab conform: %v\n", err)
			return 1
		}
	}
	if sum := conformance.Summarize(results); sum.Fail > 0 || *strict && sum.Inconclusive > 0 {
		return 1
	}
	return 0
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

func writeTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func printCatalogue(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range conformance.Catalogue() {
		fmt.Fprintf(tw, "%s\t%s\n", c.ID, c.Title)
		fmt.Fprintf(tw, "\tclaim: %s\n", c.Claim)
		fmt.Fprintf(tw, "\tbound: %s\n", c.Bound)
		if len(c.Mutants) > 0 {
			fmt.Fprintf(tw, "\tmust fail: %s\n", strings.Join(c.Mutants, ", "))
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
