//go:build linux

package cases

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/reactors"
)

// starveOnStart is a process target pinned to cpu at nice 19 (its
// command says so) which, once started, a burner process (a shell's
// empty loop) at nice -20 keeps from that CPU for at most burnFor:
// weights 15 against 88761, so after its first slice the server waits
// seconds for the CPU while it has frames to answer. The instance's Stop
// ends the burner first. (A thread of this process would not do: the Go
// runtime preempts a goroutine every 10 ms, and one locked to its thread
// then leaves the CPU until it is scheduled again.)
type starveOnStart struct {
	conformance.Command
	cpu     int
	burnFor time.Duration
	niceErr error
}

// starvedInstance is a started starveOnStart: its process group, and a
// Stop that ends the burner before it stops the server.
type starvedInstance struct {
	conformance.Instance
	conformance.ProcessGroup
	endBurn func()
}

func (s starvedInstance) Stop() (conformance.Final, error) {
	s.endBurn()
	return s.Instance.Stop()
}

func (t *starveOnStart) Start(ctx context.Context, setup conformance.Setup) (conformance.Instance, error) {
	inst, err := t.Command.Start(ctx, setup)
	if err != nil {
		return nil, err
	}
	g, ok := inst.(conformance.ProcessGroup)
	if !ok {
		return inst, nil
	}
	burner := exec.Command("nice", "-n", "-20", "taskset", "-c", strconv.Itoa(t.cpu), "timeout", strconv.Itoa(int(t.burnFor.Seconds()+0.5)), "sh", "-c", "while :; do :; done")
	if err := burner.Start(); err != nil {
		t.niceErr = err
		return inst, nil
	}
	endBurn := func() {
		burner.Process.Signal(syscall.SIGTERM) // timeout(1) passes it on to the loop
		burner.Wait()
	}
	// nice(1) that may not raise the priority runs the command anyway, at
	// its own niceness: the burner then starves nothing.
	time.Sleep(20 * time.Millisecond)
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, burner.Process.Pid); err != nil || 20-prio != -20 {
		endBurn()
		t.niceErr = fmt.Errorf("the burner runs at nice %d, not -20 (raising a priority needs CAP_SYS_NICE): %w", 20-prio, errors.Join(err, unix.EPERM))
		return inst, nil
	}
	return starvedInstance{Instance: inst, ProcessGroup: g, endBurn: endBurn}, nil
}

// runM2On runs M2 alone on target, with no start check (the case's
// instance is the only one) and grace for its stop (0: the default), and
// returns its result, logged.
func runM2On(t *testing.T, target conformance.Target, grace time.Duration) conformance.Result {
	t.Helper()
	return runCaseOn(t, "M2", target, conformance.Options{NoStartCheck: true, StopGrace: grace})
}

// A black-box echo that the machine keeps from its CPU (pinned at nice 19
// beside a thread at nice -20) answers nothing for seconds: its threads
// wait for the CPU with frames to answer. M2 must not charge the echo
// with the stall: inconclusive, saying it was starved. (On a machine
// where the echo still got the CPU in time, M2 passes and there is
// nothing to test.)
func TestM2DoesNotFailAStarvedBlackBox(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: M2 on a starved server takes 3 to 4 s")
	}
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs: one to starve the server on, one for the clients")
	}
	cpu := cpus[len(cpus)-1]
	echo := testbin.Path(t, "examples/echo")
	target := &starveOnStart{
		Command: conformance.Command{Argv: []string{"nice", "-n", "19", "taskset", "-c", strconv.Itoa(cpu), echo, "--listen", "{addr}", "--lifetime", "1m"}},
		cpu:     cpu, burnFor: 2*echoBound + time.Second,
	}
	r := runM2On(t, target, 0)
	if errors.Is(target.niceErr, unix.EPERM) {
		t.Skipf("no burner at nice -20: %v", target.niceErr)
	} else if target.niceErr != nil {
		t.Fatal(target.niceErr)
	}
	switch {
	case r.Verdict == conformance.Pass:
		t.Skip("the echo answered in time: this machine did not starve it past M2's bound")
	case r.Verdict == conformance.Inconclusive && strings.HasPrefix(r.Reason, "the server was starved of CPU"):
	default:
		t.Errorf("M2 on a black-box echo starved of CPU: %s (%s): %s; want inconclusive, saying the server was starved", r.Verdict, r.Cause, r.Reason)
	}
}

// A server that withholds echoes while it could run — oneshot skipping
// a rearm (missed-rearm): its connections stall with the loop idle —
// still fails M2 on the stall: its threads block, they do not wait for a
// CPU.
func TestM2FailsAServerThatWithholdsEchoes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: M2 on a stalling server takes 3 s")
	}
	t.Parallel() // a child process target: see TestMain
	cfg := reactors.DefaultConfig()
	cfg.Faults.MissedRearmEvery = 7
	// Its stalled connections are never drained: the stop's grace is
	// short, and its end is no part of the verdict.
	r := runM2On(t, conformance.Process{Design: reactors.OneShot, Config: &cfg, Command: []string{testbin.Path(t, "cmd/reactorlab")}}, 200*time.Millisecond)
	if r.Verdict != conformance.Fail || r.Cause != conformance.CauseClaim || !strings.Contains(r.Reason, errNoAnswer.Error()) {
		t.Errorf("M2 on oneshot with missed-rearm: %s (%s): %s; want a claim failure on a stall (%q)", r.Verdict, r.Cause, r.Reason, errNoAnswer)
	}
}
