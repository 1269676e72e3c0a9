//go:build linux

package harness

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

	"github.com/reactorlab/reactorlab/reactors"
)

// serveFlags binds every Config field to a flag, defaults from
// reactors.DefaultConfig.
func serveFlags(fs *flag.FlagSet, cfg *reactors.Config, design *string, faults *[]string, lifetime *time.Duration) {
	fs.StringVar(design, "reactor", "lt", "reference reactor: lt, et, oneshot, prio, prio-thread")
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
// ARCHITECTURE.md, "Harness").
type ServeOutput struct {
	reactors.Stats
	Data       string `json:"data_addr"`
	Control    string `json:"control_addr,omitempty"`
	StoppedBy  string `json:"stopped_by"`
	GoMaxProcs int    `json:"gomaxprocs"`
	Error      string `json:"error,omitempty"`
}

// ServeMain is `reactorlab serve`: it runs one reference reactor until a
// STOP frame, SIGTERM/SIGINT or --lifetime, then prints one JSON object
// (ServeOutput) on stdout. It returns the process exit code: 0 after a
// clean stop, 1 if the reactor failed, ExitUsage for bad flags (named on
// stderr). The harness runs it as the "serve" role; the CLI's serve
// command is this function.
func ServeMain(args []string, stdout, stderr io.Writer) int {
	cfg := reactors.DefaultConfig()
	var designName string
	var faultSpecs []string
	var lifetime time.Duration
	fs := flag.NewFlagSet("reactorlab serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serveFlags(fs, &cfg, &designName, &faultSpecs, &lifetime)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "reactorlab serve: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	design, err := reactors.ParseDesign(designName)
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab serve: --reactor: %v\n", err)
		return ExitUsage
	}
	for _, f := range faultSpecs {
		if err := reactors.ParseFault(f, &cfg.Faults); err != nil {
			fmt.Fprintf(stderr, "reactorlab serve: --fault: %v\n", err)
			return ExitUsage
		}
	}
	if lifetime <= 0 {
		fmt.Fprintf(stderr, "reactorlab serve: --lifetime = %v (accepted: > 0)\n", lifetime)
		return ExitUsage
	}
	// A locked loop thread needs a P of its own, or the Go scheduler, not
	// the design, decides its latency: loops + 1.
	loops := map[reactors.Design]int{reactors.PrioThread: 2, reactors.OneShot: cfg.Threads}[design]
	if need := max(loops, 1) + 1; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	// Catch the signals before listening: a supervisor may send SIGTERM as
	// soon as the port accepts, and the final JSON must still be written.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	r, err := reactors.New(design, cfg)
	if err != nil {
		if errors.Is(err, reactors.ErrConfig) {
			fmt.Fprintf(stderr, "reactorlab serve: --%v\n", strings.TrimPrefix(err.Error(), reactors.ErrConfig.Error()+": "))
			return ExitUsage
		}
		fmt.Fprintf(stderr, "reactorlab serve: %v\n", err)
		return 1
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
		out.StoppedBy = "signal " + s.String()
		r.Stop()
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
		fmt.Fprintf(stderr, "reactorlab serve: %v\n", jerr)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", enc)
	return code
}
