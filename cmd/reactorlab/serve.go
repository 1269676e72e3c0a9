package main

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
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "data address host:port (port 0 picks one)")
	fs.StringVar(&cfg.ControlListen, "control-listen", cfg.ControlListen, "control address host:port for PING/STOP (empty: none; STOP then by signal only)")
	b := &cfg.Budgets
	fs.IntVar(&b.Ingress, "budget-ingress", b.Ingress, "cross-thread items drained per round (1..1048576)")
	fs.IntVar(&b.Input, "budget-input", b.Input, "frames served per source turn (1..1048576)")
	fs.IntVar(&b.Consume, "budget-consume", b.Consume, "ready sources served per round (1..1048576)")
	fs.IntVar(&b.Bytes, "budget-bytes", b.Bytes, "bytes read per source turn (64..1073741824)")
	fs.DurationVar(&b.Time, "budget-time", b.Time, "time per source turn, 0 disables (>= 0)")
	fs.IntVar(&b.Accept, "budget-accept", b.Accept, "connections accepted per listener turn (1..1048576)")
	fs.IntVar(&b.ClockEvery, "clock-every", b.ClockEvery, "frames or sources between clock reads under a time budget (1..1048576)")
	fs.IntVar(&cfg.OutHigh, "out-high", cfg.OutHigh, "out-queue high watermark in bytes: stop reading above it (<= out-cap)")
	fs.IntVar(&cfg.OutLow, "out-low", cfg.OutLow, "out-queue low watermark in bytes: resume reading at or below it (< out-high)")
	fs.IntVar(&cfg.OutCap, "out-cap", cfg.OutCap, "out-queue hard cap in bytes: close the connection above it (>= max-frame)")
	fs.IntVar(&cfg.MaxFrame, "max-frame", cfg.MaxFrame, "largest frame accepted, header included, in bytes (64..1073741824)")
	fs.Func("timer", "timer mode: periodic or deadline (default periodic)", func(s string) error {
		cfg.Timer = reactors.TimerMode(s)
		return nil
	})
	fs.DurationVar(&cfg.Tick, "tick", cfg.Tick, "periodic timer tick (10µs..1s)")
	fs.DurationVar(&cfg.AppTimer, "app-timer", cfg.AppTimer, "recurring application timer whose lateness is recorded, 0 off (0 or >= 10µs)")
	fs.StringVar(&cfg.Callback, "callback", cfg.Callback, "CPU cost per DATA frame: 0, 50us, fixed:50us, uniform:10us-90us, exp:50us, lognormal:50us,0.5")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "offload callbacks to this many pool workers, 0 runs them inline (0..1024)")
	fs.IntVar(&cfg.WorkerQueue, "worker-queue", cfg.WorkerQueue, "tasks waiting for the pool (1..16777216)")
	fs.IntVar(&cfg.IngressCap, "ingress-cap", cfg.IngressCap, "ingress queue capacity per loop (2..16777216)")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "oneshot worker threads (1..256)")
	fs.DurationVar(&cfg.PrioDataBudget, "prio-data-budget", cfg.PrioDataBudget, "prio: data bucket time per round (>= 1µs)")
	fs.IntVar(&cfg.MaxConns, "max-conns", cfg.MaxConns, "connections per reactor (16..16777216)")
	fs.IntVar(&cfg.MaxEvents, "max-events", cfg.MaxEvents, "epoll_wait batch size (1..65536)")
	fs.Func("wait", "how an idle loop waits: poll-first or block (default poll-first)", func(s string) error {
		cfg.Wait = reactors.WaitMode(s)
		return nil
	})
	fs.DurationVar(&cfg.StopGrace, "stop-grace", cfg.StopGrace, "time out-queues may take to drain after STOP_ACK (0..1h]")
	fs.Func("fault", "reactor fault (mutant), repeatable: "+strings.Join(reactors.FaultNames, ", "), func(s string) error {
		*faults = append(*faults, s)
		return nil
	})
	fs.DurationVar(lifetime, "lifetime", time.Hour, "stop by itself after this long (> 0): every run is bounded")
}

// serveOutput is the one JSON object serve prints on stdout at the end.
type serveOutput struct {
	reactors.Stats
	Data       string `json:"data_addr"`
	Control    string `json:"control_addr,omitempty"`
	StoppedBy  string `json:"stopped_by"`
	GoMaxProcs int    `json:"gomaxprocs"`
	Error      string `json:"error,omitempty"`
}

func serve(args []string, stdout, stderr io.Writer) int {
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
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "reactorlab serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	design, err := reactors.ParseDesign(designName)
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab serve: --reactor: %v\n", err)
		return exitUsage
	}
	for _, f := range faultSpecs {
		if err := reactors.ParseFault(f, &cfg.Faults); err != nil {
			fmt.Fprintf(stderr, "reactorlab serve: --fault: %v\n", err)
			return exitUsage
		}
	}
	if lifetime <= 0 {
		fmt.Fprintf(stderr, "reactorlab serve: --lifetime = %v (accepted: > 0)\n", lifetime)
		return exitUsage
	}
	// A locked loop thread needs a P of its own, or the Go scheduler, not
	// the design, decides its latency: loops + 1.
	loops := map[reactors.Design]int{reactors.PrioThread: 2, reactors.OneShot: cfg.Threads}[design]
	if need := max(loops, 1) + 1; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	r, err := reactors.New(design, cfg)
	if err != nil {
		if errors.Is(err, reactors.ErrConfig) {
			fmt.Fprintf(stderr, "reactorlab serve: --%v\n", strings.TrimPrefix(err.Error(), reactors.ErrConfig.Error()+": "))
			return exitUsage
		}
		fmt.Fprintf(stderr, "reactorlab serve: %v\n", err)
		return 1
	}
	out := serveOutput{Data: r.Addr().String(), GoMaxProcs: runtime.GOMAXPROCS(0)}
	if r.ControlAddr().IsValid() {
		out.Control = r.ControlAddr().String()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
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
