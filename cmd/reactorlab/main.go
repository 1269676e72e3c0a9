// Command reactorlab is the conformance and load-test suite for epoll
// reactors. This package parses flags and wires packages together; the
// logic lives in the packages it calls.
//
//	reactorlab matrix [SUITE|FILE.yaml] [--shard i/n] [--out DIR] [--list]
//	reactorlab merge OUT SHARD_DIR...
//	reactorlab report DIR
//	reactorlab compare OLD NEW [--threshold 10%] [--metrics m1,m2]
//	reactorlab serve --reactor lt|et|oneshot|prio|prio-thread [flags]
//	reactorlab run --reactor lt|...|--target cmd:'COMMAND' [load flags] [--out DIR]
//	reactorlab loadgen --config FILE --out DIR
//	reactorlab conform --target lt|...|cmd:'COMMAND' [--case ID] [--json FILE] [--junit FILE]
//	reactorlab footprint --target lt|...|cmd:'COMMAND' [--conns 10000] [--json]
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/reactorlab/reactorlab/harness"
)

// exitUsage is the exit code for bad flags or arguments.
const exitUsage = 2

func main() {
	// A child of the harness (the lab, a reactor, the load generator) runs
	// its role here and exits.
	harness.RunRoleIfChild()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "run":
		return runCell(args[1:], stdout, stderr)
	case "loadgen":
		return harness.LoadgenMain(args[1:], stdout, stderr)
	case "conform":
		return conform(args[1:], stdout, stderr)
	case "matrix":
		return matrixCmd(args[1:], stdout, stderr)
	case "merge":
		return mergeCmd(args[1:], stdout, stderr)
	case "report":
		return reportCmd(args[1:], stdout, stderr)
	case "compare":
		return compareCmd(args[1:], stdout, stderr)
	case "footprint":
		return footprintCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "reactorlab: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: reactorlab <command> [flags]

commands:
  matrix  run a suite of one-factor-at-a-time comparisons (default: quick,
          about 3 minutes) and write its report (matrix --list shows the
          built-in suites; matrix --help the flags)
  merge   join the shard directories of one matrix run (matrix --shard i/n)
  report  write a matrix run directory's reports again
  compare compare two matrix runs cell by cell; exit 1 on a significant
          regression beyond --threshold (a CI gate)
  serve   run a reference reactor until STOP, SIGTERM/SIGINT or --lifetime
          (reactorlab serve --help lists every flag with its default)
  run     measure one cell: a reference reactor or any server under load,
          in the lab (network namespaces, pinned CPUs) or on loopback;
          prints a wrk2-style summary and writes HDR logs (run --help)
  loadgen the load generator alone, as run uses it (loadgen --help)
  conform run the conformance suite against a reference reactor or any
          server command; exit 0 if nothing failed, 1 if something did
          (reactorlab conform --list prints the catalogue)
  footprint
          a server's resident memory per idle connection: open --conns
          (10,000) connections, each echoing one frame, and compare RSS
`)
}
