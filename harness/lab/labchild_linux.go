//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/target"
)

// The roles of the run child, of its keeper, and of the keeper's probe
// (internalRoles).
const (
	labRole    = "lab"
	keeperRole = "lab-keeper"
	nopRole    = "lab-nop"
)

// Faults a test plants in the run child (labRequest.Break). Each stands
// for a bug of ours, so that a test can show it is caught: breakVeth and
// breakSysctl make a setup step fail for real (the kernel refuses an
// over-long peer name, a malformed port range), breakWorkers lets the
// workers' threads go back to Go's pool in whatever namespace they are.
const (
	breakVeth    = "veth"
	breakSysctl  = "sysctl"
	breakWorkers = "unlock-workers"
)

func init() {
	RegisterRole(labRole, labMain)
	RegisterRole(keeperRole, keeperMain)
	RegisterRole(nopRole, func([]string) int { return 0 })
}

// errInterrupted is the cause of a run wound down by SIGINT
// (Spec.Interrupt).
var errInterrupted = errors.New("a signal to the harness wound it down")

// labMain is the run child. For a lab it is PID 1 of its own PID
// namespace, in its own network and mount namespaces; for loopback it runs
// in the harness's namespaces. It reads a labRequest from stdin, writes
// labEvents to stdout, and returns 0 once it has reported a result, 1 if
// the run could not be set up. Before it reports, with its processes
// reaped and its workers ended, it audits itself: every thread must be
// back in its own network namespace and on a mask it started with, and no
// process it started may still run. When a lab child exits, the kernel
// kills whatever is left in its PID namespace; the keeper sweeps up what a
// loopback run child leaves.
func labMain([]string) int {
	// SIGINT winds the run down (Spec.Interrupt); caught first, as the
	// default would end the run child without a report.
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, syscall.SIGINT)
	defer signal.Stop(intr)
	out := json.NewEncoder(os.Stdout)
	setupFailed := func(serr *setupError) int {
		out.Encode(labEvent{SetupError: serr.step + ": " + serr.err.Error(), Unavailable: serr.unavailable})
		return 1
	}
	start := time.Now()
	var req labRequest
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 1<<20)).Decode(&req); err != nil {
		return setupFailed(&setupError{step: "read the request", err: err})
	}
	if req.Break == breakWorkers {
		workersReturnThreads = true
	}
	base, err := childBaseline()
	if err != nil {
		return setupFailed(&setupError{step: "read the run child's threads", err: err})
	}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(req.Budget))
	defer cancel()

	l, serr := setup(req)
	if serr != nil {
		return setupFailed(serr)
	}
	out.Encode(labEvent{Setup: &labSetup{Namespaces: l.namespaces, Sysctls: l.sysctls, Addr: l.addr, Control: l.control}})
	rep := &labReport{Addr: l.addr, Control: l.control}
	if !req.Probe {
		l.runPair(ctx, req, rep, intr, func(up labUp) { out.Encode(labEvent{Up: &up}) })
	}
	l.close() // both processes are reaped: the workers may end
	// The audit may take up to auditSettle while it finds a difference,
	// and must leave time to report within the budget's margin.
	settle := min(auditSettle, time.Until(start.Add(req.Budget+reportMargin/2)))
	rep.Audit = auditChild(base, settle)
	if req.Probe {
		if len(rep.Audit.Diffs) > 0 {
			fmt.Fprintf(os.Stderr, "lab: probe: %s\n", strings.Join(rep.Audit.Diffs, "; "))
			return 1
		}
		return 0
	}
	if err := out.Encode(labEvent{Result: rep}); err != nil {
		fmt.Fprintf(os.Stderr, "lab: report the result: %v\n", err)
		return 1
	}
	return 0
}

// setup sets up the run req asks for: the lab (once checkLabChild has
// found this process in namespaces of its own), or loopback.
func setup(req labRequest) (*lab, *setupError) {
	if req.Loopback {
		return setupLoopback(req)
	}
	if err := checkLabChild(req.ParentNS); err != nil {
		return nil, &setupError{step: "check the namespaces", err: err}
	}
	return setupLab(req)
}

// runPair runs the measured pair of req in the lab l (orchestrate), wound
// down by SIGINT (intr), telling onUp once both processes have started,
// and records both processes and any error (a *target.StartError among them) in
// rep.
func (l *lab) runPair(ctx context.Context, req labRequest, rep *labReport, intr <-chan os.Signal, onUp func(labUp)) {
	s := &validSpec{Spec: req.Spec, sysctls: req.Sysctls}
	pr := pair{server: l.server.w, client: l.client.w, addr: l.addr, control: l.control, probe: !req.Loopback}
	octx, ocancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-intr:
			ocancel(errInterrupted)
		case <-octx.Done():
		}
	}()
	var err error
	rep.Server, rep.Client, err = orchestrate(octx, s, pr, onUp)
	ocancel(nil)
	if err != nil {
		rep.Error = err.Error()
		if sf := (*target.StartError)(nil); errors.As(err, &sf) {
			rep.Start = sf
		}
	}
}

// checkLabChild refuses to set up a lab anywhere but in fresh PID and mount
// namespaces: the role mounts over /proc and changes mount propagation,
// which must never happen to the parent's mounts.
func checkLabChild(parent map[string]string) error {
	if os.Getpid() != 1 {
		return fmt.Errorf("pid %d: the lab role runs only as PID 1 of a new PID namespace, started by lab.Run", os.Getpid())
	}
	for _, k := range []string{"mnt", "pid"} {
		own, err := procfs.Namespace(procfs.Self, k)
		if err != nil {
			return err
		}
		if p := parent[k]; p == "" || p == own {
			return fmt.Errorf("still in the parent's %s namespace %s", k, own)
		}
	}
	return nil
}
