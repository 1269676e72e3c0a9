//go:build linux

package roles

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// Serve is the name the serve role is registered under: a cell's
// reference reactor is this program as ServeMain, started as
// lab.RolePrefix+Serve.
const Serve = "serve"

func init() {
	lab.RegisterRole(Serve, func(args []string) int { return ServeMain(args, os.Stdout, os.Stderr) })
}

// serveFlags binds every Config field to a flag, defaults from
// reactors.DefaultConfig.
func serveFlags(fs *flag.FlagSet, cfg *reactors.Config, design *string, faults *[]string, lifetime *time.Duration) {
	fs.StringVar(design, "reactor", "lt", "reference reactor: "+designs.NameList())
	cfg.Flags(fs)
	fs.Func("fault", "reactor fault (mutant), repeatable: "+strings.Join(reactors.FaultNames, ", "), func(s string) error {
		*faults = append(*faults, s)
		return nil
	})
	fs.DurationVar(lifetime, "lifetime", time.Hour, "stop by itself after this long (> 0): every run is bounded")
}

// ServeOutput is the one JSON object ServeMain prints on stdout at the end:
// the reactor's final stats, its addresses, why it stopped, and the
// GOMAXPROCS it ran with (at least its loop threads + 1, see
// docs/ARCHITECTURE.md, "Harness").
type ServeOutput struct {
	reactors.Stats
	Data       string `json:"data_addr"`
	Control    string `json:"control_addr,omitempty"`
	StoppedBy  string `json:"stopped_by"`
	GoMaxProcs int    `json:"gomaxprocs"`
	Error      string `json:"error,omitempty"`
}

const serveSynopsis = `reactorlab serve [--reactor DESIGN] [--listen ADDR] [--control-listen ADDR] [flags]`

const serveDescription = `Runs one reference reactor (--reactor, one of those listed below; the
other flags are its configuration, as go doc ./reactors describes it),
serving the framed echo on --listen and PING/STOP on --control-listen,
until a STOP frame, SIGTERM or SIGINT, or --lifetime. It prints its
addresses on stderr once it listens and, when it stops, its final
statistics as one JSON object on stdout (ledger, counters, histograms,
why it stopped). On SIGTERM or SIGINT it stops as a server should: it
refuses new connections, answers every frame it has read, shuts each
connection with FIN once its echoes are written and closes it at the
client's EOF, within --stop-grace. Exit 0 after a clean stop (a signal is
the normal way to stop it), 1 if the reactor failed, 2 for a flag or configuration it
refuses (nothing was started). reactorlab run starts it in the lab, with
a load generator: to measure a reactor, use run.`

// serveCommand is `reactorlab serve`'s help and flags.
func serveCommand(cfg *reactors.Config, design *string, faults *[]string, lifetime *time.Duration) *cli.Command {
	c := cli.New("reactorlab serve", serveSynopsis, serveDescription)
	serveFlags(c.Flags, cfg, design, faults, lifetime)
	return c
}

// ServeMain is `reactorlab serve`: it runs one reference reactor until a
// STOP frame, SIGTERM/SIGINT or --lifetime, then prints one JSON object
// (ServeOutput) on stdout. It returns the process exit code: 0 after a
// clean stop, 1 if the reactor failed, cli.ExitUsage for bad flags or a
// configuration the reactor refuses (named on stderr, in the words of
// CheckServe, with a pointer to --help). --help prints the help on stdout
// and returns 0. The harness runs it as the "serve" role, where the same
// usage errors go to the role's stderr; the CLI's serve command is this
// function.
func ServeMain(args []string, stdout, stderr io.Writer) int {
	cfg := reactors.DefaultConfig()
	var designName string
	var faultSpecs []string
	var lifetime time.Duration
	c := serveCommand(&cfg, &designName, &faultSpecs, &lifetime)
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	design, err := designs.Parse(designName)
	if err != nil {
		return c.Usagef(stderr, "--reactor: %v", err)
	}
	for _, f := range faultSpecs {
		if err := reactors.ParseFault(f, &cfg.Faults); err != nil {
			return c.Usagef(stderr, "--fault: %s", strings.TrimPrefix(err.Error(), reactors.ErrConfig.Error()+": "))
		}
	}
	if lifetime <= 0 {
		return c.Usagef(stderr, "--lifetime = %v (accepted: > 0)", lifetime)
	}
	if err := CheckServe(design, cfg); err != nil {
		return c.Usagef(stderr, "%v", err)
	}
	// Catch the signals before listening: a supervisor may send SIGTERM as
	// soon as the port accepts, and the final JSON must still be written.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	r, err := designs.New(design, cfg)
	if err != nil {
		if errors.Is(err, reactors.ErrPrivilege) { // refused, but no usage error
			return c.Errorf(stderr, cli.ExitUsage, "%s", serveMessage(err))
		}
		if errors.Is(err, reactors.ErrConfig) { // CheckServe's, should it ever miss one
			return c.Usagef(stderr, "%s", serveMessage(err))
		}
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	// A locked loop thread needs a P of its own, or the Go scheduler, not
	// the design, decides its latency: loops + 1.
	if need := r.Loops() + 1; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	out := ServeOutput{Data: r.Addr().String(), GoMaxProcs: runtime.GOMAXPROCS(0)}
	if r.ControlAddr().IsValid() {
		out.Control = r.ControlAddr().String()
	}
	r.Start()
	fmt.Fprintf(stderr, "reactorlab serve: %s data=%s control=%s\n", design, out.Data, out.Control)
	timer := time.NewTimer(lifetime)
	defer timer.Stop()
	out.StoppedBy = "STOP frame"
	select {
	case <-r.Done():
	case s := <-sigs:
		// A signal asks for a server's stop: answer what was read, FIN
		// each connection, refuse new ones (Reactor.Drain).
		out.StoppedBy = "signal " + s.String()
		r.Drain()
	case <-timer.C:
		out.StoppedBy = "lifetime"
		r.Stop()
	}
	out.Stats, err = r.Wait()
	code := 0
	if err != nil {
		out.Error = err.Error()
		code = 1
	}
	enc, jerr := json.Marshal(out)
	if jerr != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", jerr)
	}
	fmt.Fprintf(stdout, "%s\n", enc)
	return code
}
