//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/target"
)

// targetDiagnosis is what diagnose --target saw: the target, the load it
// put on it (nil: none), a report per process that held its listener,
// and how the target ended when stopped.
type targetDiagnosis struct {
	Target string `json:"target"`
	// Load is the load's configuration and totals, nil without load.
	Load *loadOutcome `json:"load,omitempty"`
	// Reports are one per serving process, in pid order.
	Reports []diagnose.Report `json:"reports"`
	// Stopped is how the target ended once stopped ("exit 0", "signal
	// terminated"); AtStop, when not empty, how it ended badly then (a
	// crash, another status, a kill after the grace), which is said and
	// never counted as a finding.
	Stopped string `json:"stopped"`
	AtStop  string `json:"at_stop,omitempty"`
}

// loadOutcome is the load diagnose put on a target: its shape and what
// came of the frames it sent.
type loadOutcome struct {
	Hot      int                `json:"hot"`
	InFlight int                `json:"inflight"`
	Steady   int                `json:"steady"`
	Rate     float64            `json:"rate"`
	Payload  int                `json:"payload"`
	Totals   loadgen.Accounting `json:"totals"`
	Error    string             `json:"error,omitempty"`
}

// text is the load on one line.
func (l *loadOutcome) text() string {
	var shape []string
	if l.Hot > 0 {
		shape = append(shape, fmt.Sprintf("%s × %d in flight", figure.Counted(l.Hot, "hot source", "hot sources"), l.InFlight))
	}
	if l.Steady > 0 {
		shape = append(shape, fmt.Sprintf("%s at %g frames/s in all", figure.Counted(l.Steady, "steady source", "steady sources"), l.Rate))
	}
	s := fmt.Sprintf("load: %s, %d-byte payloads: %d frames sent, %d echoed", strings.Join(shape, " and "), l.Payload, l.Totals.Sent, l.Totals.Echoed)
	if l.Error != "" {
		s += "; it failed: " + l.Error
	}
	return s
}

// diagnoseTarget is diagnose --target: start the target as conform
// starts one, put the load on, observe every process that serves it,
// stop it, report.
func diagnoseTarget(ctx context.Context, c *cli.Command, f *diagnoseFlags, stdout, stderr io.Writer) int {
	if len(f.faults) > 0 && strings.HasPrefix(f.target, target.CommandPrefix) {
		return c.Usagef(stderr, "--fault applies to --target DESIGN only (a reference reactor's mutant), not to cmd: targets")
	}
	tgt, err := conformTarget(f.target, f.faults, false, f.grace)
	if err != nil {
		return c.Usagef(stderr, "%v", err)
	}
	t0 := time.Now()
	inst, err := conformance.StartInstance(ctx, tgt, conformance.Setup{}, f.startTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return c.Errorf(stderr, cli.ExitInterrupted, "interrupted while starting %s: nothing observed", tgt.Name())
		}
		return conformRefusal(stderr, "reactorlab diagnose", "nothing was observed", err)
	}
	d := targetDiagnosis{Target: tgt.Name()}
	stopped := false
	stopTarget := func() {
		if stopped {
			return
		}
		stopped = true
		final, err := inst.Stop()
		d.Stopped, d.AtStop = final.Exit, final.AtStop
		if err != nil {
			d.Stopped = "not stopped cleanly: " + err.Error()
		}
	}
	defer stopTarget()
	serving, _, err := conformance.ServingProcesses(inst)
	if err != nil {
		stopTarget()
		return c.Errorf(stderr, cli.ExitFail, "%s started (it accepts on %s), but %v: nothing judged (stopped: %s)", tgt.Name(), inst.Addr(), err, d.Stopped)
	}
	fmt.Fprintf(stderr, "reactorlab diagnose: %s started and listening on %s (checked in %v); observing pid %v for %v\n",
		tgt.Name(), inst.Addr(), time.Since(t0).Round(time.Millisecond), serving, f.window)

	// The load, from before the window to its end.
	loadCtx, cancelLoad := context.WithCancel(ctx)
	defer cancelLoad()
	var loadDone chan struct{}
	if f.loaded() {
		cfg := f.loadConfig(inst.Addr())
		d.Load = &loadOutcome{Hot: cfg.Hot, InFlight: cfg.InFlight, Steady: cfg.Steady, Rate: cfg.Rate, Payload: cfg.WithDefaults().Payload}
		loadDone = make(chan struct{})
		go func() {
			defer close(loadDone)
			res, err := loadgen.Run(loadCtx, cfg)
			if res != nil {
				d.Load.Totals = res.Totals
			}
			if err != nil && loadCtx.Err() == nil {
				d.Load.Error = err.Error()
			}
		}()
		select {
		case <-time.After(diagnoseLoadLead):
		case <-loadDone:
		case <-ctx.Done():
		}
	}

	reports, errs := make([]diagnose.Report, len(serving)), make([]error, len(serving))
	var wg sync.WaitGroup
	for i, pid := range serving {
		wg.Go(func() { reports[i], errs[i] = diagnose.Observe(ctx, pid, diagnose.Options{Window: f.window}) })
	}
	wg.Wait()
	cancelLoad()
	if loadDone != nil {
		<-loadDone
	}
	stopTarget()
	if ctx.Err() != nil {
		return c.Errorf(stderr, cli.ExitInterrupted, "interrupted, nothing judged (%s stopped: %s)", tgt.Name(), d.Stopped)
	}

	var failures []string
	for i, pid := range serving {
		if errs[i] != nil {
			failures = append(failures, errs[i].Error()) // it names the pid
			continue
		}
		d.Reports = append(d.Reports, reports[i])
		if reports[i].Sampled == 0 {
			failures = append(failures, fmt.Sprintf("pid %d: no thread's system call could be read (the report says why): nothing judged", pid))
		}
	}
	if d.Load != nil && d.Load.Error != "" {
		failures = append(failures, "the load could not be put on the target: "+d.Load.Error)
	}
	human := cli.HumanOut(f.jsonOut, stdout, stderr)
	if f.jsonOut != "" {
		if err := cli.WriteTo(f.jsonOut, stdout, func(w io.Writer) error { return writeJSON(w, d) }); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
	}
	d.writeText(human)
	if len(failures) > 0 {
		for _, msg := range failures {
			fmt.Fprintf(stderr, "reactorlab diagnose: %s\n", msg)
		}
		return cli.ExitFail
	}
	for _, r := range d.Reports {
		if r.Findings() > 0 {
			return cli.ExitFail
		}
	}
	return cli.ExitOK
}

// writeText writes the diagnosis as a person reads it: the target and
// its load, each report, and how it ended.
func (d targetDiagnosis) writeText(w io.Writer) {
	fmt.Fprintf(w, "target %s\n", d.Target)
	if d.Load != nil {
		fmt.Fprintln(w, d.Load.text())
	}
	for _, r := range d.Reports {
		fmt.Fprintln(w)
		r.WriteText(w)
	}
	fmt.Fprintf(w, "\nstopped: %s\n", d.Stopped)
	if d.AtStop != "" {
		fmt.Fprintf(w, "at its stop the target ended badly (said, not counted: the window was observed before it): %s\n", d.AtStop)
	}
}
