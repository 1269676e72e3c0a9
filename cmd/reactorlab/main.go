// Command reactorlab is the conformance and load-test suite for epoll
// reactors. This package parses flags and wires packages together; the
// logic lives in the packages it calls.
//
//	reactorlab matrix [SUITE|FILE.yaml] [--shard i/n] [--out DIR] [--resume DIR] [--json FILE|-] [--list]
//	reactorlab merge OUT SHARD_DIR... [--json FILE|-]
//	reactorlab report DIR [--json FILE|-]
//	reactorlab compare OLD NEW [--threshold 10%] [--metrics m1,m2] [--require-all] [--json FILE|-]
//	reactorlab run --target DESIGN|cmd:'COMMAND' [load flags] [--start-timeout 10s] [--out DIR] [--json FILE|-]
//	reactorlab serve --reactor DESIGN [flags]
//	reactorlab loadgen --config FILE --out DIR
//	reactorlab conform --target DESIGN|cmd:'COMMAND' [--case ID] [--start-timeout 10s] [--json FILE|-] [--junit FILE|-]
//	reactorlab footprint --target DESIGN|cmd:'COMMAND' [--conns 10000] [--start-timeout 10s] [--json FILE|-]
//	reactorlab diagnose --pid PID | --target DESIGN|cmd:'COMMAND' [--hot N] [--steady N --rate R] [--for 2s] [--json FILE|-]
//	reactorlab version [--json FILE|-]
//	reactorlab help [COMMAND]
//
// A target is the same everywhere: a reference design or cmd:'COMMAND'
// (package target); run also takes --reactor as an alias of --target.
//
// Every subcommand prints its help on stdout for --help (or `reactorlab
// help COMMAND`), and exits 0 when it found nothing wrong, 1 when it found
// something wrong or could not finish, 2 when it refused to start (a usage
// error, or a target that could not be started), 130 when interrupted.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/internal/cli"
)

// exitUsage is the exit code for bad flags or arguments.
const exitUsage = cli.ExitUsage

func main() {
	// A child of the harness (the lab, a reactor, the load generator) runs
	// its role here and exits.
	lab.RunRoleIfChild()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// subcommand is one entry of the top-level help and dispatch.
type subcommand struct {
	name    string
	summary string // one line or two for the top-level help
	main    func(args []string, stdout, stderr io.Writer) int
}

// subcommands is every command the tool has, in the order the top-level
// help lists them.
var subcommands = []subcommand{
	{"matrix", "run a suite of one-factor-at-a-time comparisons (default: quick)\nand write its reports; --list shows the built-in suites", matrixCmd},
	{"merge", "join the shard directories of one matrix run (matrix --shard i/n)", mergeCmd},
	{"report", "write a matrix run directory's reports again", reportCmd},
	{"compare", "compare two matrix runs cell by cell; exit 1 on a significant\nregression beyond --threshold (a CI gate)", compareCmd},
	{"run", "measure one cell: a reference reactor or any server under load,\nin the lab (network namespaces, pinned CPUs) or on loopback", runCell},
	{"serve", "run a reference reactor until STOP, SIGTERM/SIGINT or --lifetime", serve},
	{"loadgen", "the load generator alone, as run uses it", roles.LoadgenMain},
	{"conform", "run the conformance suite against a reference reactor or any\nserver command (conform --list prints the catalogue)", conform},
	{"footprint", "a server's resident memory per idle connection", footprintCmd},
	{"diagnose", "say what a live process's (or a started target's) event-loop threads\nwere doing: waiting, serving, spinning, blocked or starved, with the\nsignals that say so", diagnoseCmd},
	{"version", "print the module version, VCS revision and Go version", versionCmd},
	{"help", "print this help, or a command's (help COMMAND)", nil},
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "-version", "--version":
		return versionCmd(args[1:], stdout, stderr)
	case "help":
		return helpCmd(args[1:], stdout, stderr)
	}
	for _, c := range subcommands {
		if c.name == name && c.main != nil {
			return c.main(args[1:], stdout, stderr)
		}
	}
	what := "command"
	if strings.HasPrefix(name, "-") {
		what = "flag"
	}
	fmt.Fprintf(stderr, "reactorlab: unknown %s %q\nRun 'reactorlab --help' for usage.\n", what, name)
	return exitUsage
}

// helpCmd is `reactorlab help [COMMAND]`: the top-level help, or the
// command's own (what COMMAND --help prints), on stdout.
func helpCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		usage(stdout)
		return 0
	}
	switch len(args) {
	case 0:
		usage(stdout)
		return 0
	case 1:
		for _, c := range subcommands {
			if c.name == args[0] && c.main != nil {
				return c.main([]string{"--help"}, stdout, stderr)
			}
		}
		if args[0] == "help" {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "reactorlab help: unknown command %q\nRun 'reactorlab --help' for the list.\n", args[0])
		return exitUsage
	default:
		fmt.Fprintf(stderr, "reactorlab help: one command at a time (got %d)\nRun 'reactorlab --help' for the list.\n", len(args))
		return exitUsage
	}
}

// usage writes the top-level help: what the tool is, its commands, and
// the exit codes every command shares.
func usage(w io.Writer) {
	fmt.Fprint(w, `usage: reactorlab COMMAND [flags]
       reactorlab help COMMAND
       reactorlab --version

reactorlab tests epoll reactors (event loops): a conformance suite of fault
cases, and a load generator with HDR latency histograms run in network
namespaces with pinned CPUs, one factor at a time.

commands:
`)
	for _, c := range subcommands {
		lines := strings.Split(c.summary, "\n")
		fmt.Fprintf(w, "  %-10s %s\n", c.name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "  %-10s %s\n", "", l)
		}
	}
	fmt.Fprint(w, `
Every command takes --help. Exit status, for every command: 0 nothing found
wrong, 1 something found wrong (a failed case, an invalid run, a regression)
or the work could not finish, 2 refused before anything ran (bad flags or
arguments, a target that could not be started), 130 interrupted.
`)
}
