//go:build linux

package conformance

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// InProcess is a reference reactor run inside the calling process: the
// fastest target, with live counters, but sharing the caller's descriptor
// table (cases that set a descriptor limit are skipped) and memory (memory
// bounds use the reactor's own byte counts instead of RSS). Start raises
// GOMAXPROCS so every loop thread and the suite's clients have a P (Stop
// restores it): run one in-process instance at a time.
type InProcess struct {
	Design reactors.DesignName
	// Config is the base configuration (zero value: reactors.DefaultConfig);
	// its Faults make the target a mutant. Listen addresses are always
	// 127.0.0.1:0.
	Config *reactors.Config
}

// Name is the design, with its faults if any ("lt", "et+no-drain").
func (t InProcess) Name() string { return refName(t.Design, t.Config) }

func refName(d reactors.DesignName, cfg *reactors.Config) string {
	name := string(d)
	if cfg != nil {
		for _, f := range cfg.Faults.Specs() {
			name += "+" + f
		}
	}
	return name
}

// config is the case's configuration of a reference target.
func refConfig(design reactors.DesignName, base *reactors.Config, setup Setup) reactors.Config {
	cfg := reactors.DefaultConfig()
	if base != nil {
		cfg = *base
	}
	if setup.Tweak != nil {
		faults := cfg.Faults
		setup.Tweak(design, &cfg)
		cfg.Faults = faults // a case never switches faults
	}
	return cfg
}

// Start builds and starts the reactor.
func (t InProcess) Start(ctx context.Context, setup Setup) (Instance, error) {
	if setup.FdLimit > 0 {
		return nil, fmt.Errorf("an in-process reactor shares the test's descriptor table, so its limit cannot be set: run a child-process target: %w", ErrUnsupported)
	}
	cfg := refConfig(t.Design, t.Config, setup)
	cfg.Listen, cfg.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
	r, err := designs.New(t.Design, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	// Like reactorlab serve, give every locked loop thread a P of its own
	// plus one; the suite's own client goroutines (up to four busy ones)
	// need theirs too, or the Go scheduler, not the design, decides the
	// latencies the cases bound.
	prevProcs := runtime.GOMAXPROCS(0)
	if need := r.Loops() + 1 + 4; prevProcs < need {
		runtime.GOMAXPROCS(need)
	} else {
		prevProcs = 0
	}
	r.Start()
	return &inProcess{r: r, ref: &Reference{Design: t.Design, Config: cfg}, prevProcs: prevProcs}, nil
}

type inProcess struct {
	r     *reactors.Reactor
	ref   *Reference
	final *Final
	// prevProcs is GOMAXPROCS to restore at Stop (0: unchanged).
	prevProcs int
}

func (i *inProcess) Addr() string                   { return i.r.Addr().String() }
func (i *inProcess) ControlAddr() string            { return i.r.ControlAddr().String() }
func (i *inProcess) Reference() *Reference          { return i.ref }
func (i *inProcess) Stats() (reactors.Stats, error) { return i.r.Stats(), nil }

func (i *inProcess) Usage() (Usage, error) {
	u := Usage{CPU: i.r.LoopCPU(), RSS: -1, Fds: -1}
	pid := os.Getpid()
	for _, tid := range i.r.LoopThreads() {
		s, err := proc.ReadTaskSchedstat(pid, tid)
		if err != nil {
			u.RunqWait = -1 // no schedstat, or a loop has exited
			break
		}
		u.RunqWait += time.Duration(s.WaitNs)
	}
	return u, nil
}

func (i *inProcess) Stop() (Final, error) {
	if i.final != nil {
		return *i.final, nil
	}
	_, stopErr := i.r.Stop()
	st, err := i.r.Wait()
	f := Final{Stats: &st, Exit: "stopped", Clean: err == nil && stopErr == nil}
	if err != nil {
		f.Exit = "reactor error: " + err.Error()
	}
	i.final = &f
	if i.prevProcs > 0 {
		runtime.GOMAXPROCS(i.prevProcs)
	}
	return f, nil
}
