//go:build linux

package cases

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/reactors"
)

// A server whose CPU goes to allocating memory while every thread of it
// blocks between rounds (examples/echo --churn: 1 MiB per open
// connection every 10 ms) uses more CPU than R4's bound at a full table,
// but is not spinning on it: R4 must not charge it with a spin. Over the
// bound, the verdict is inconclusive with both figures; a machine too
// busy to give it that much CPU leaves nothing to tell.
func TestR4AllocatingServerIsNotASpinner(t *testing.T) {
	t.Parallel() // a child process target: see TestMain
	echo := testbin.Path(t, "examples/echo")
	r := runCaseOn(t, "R4", conformance.Command{Argv: []string{echo, "--listen", "{addr}", "--lifetime", "1m", "--churn", strconv.Itoa(1 << 20)}}, conformance.Options{})
	switch r.Verdict {
	case conformance.Fail:
		t.Errorf("R4 failed a server that allocates and blocks: %s (%s); want no spin named", r.Reason, r.Cause)
	case conformance.Inconclusive:
		if strings.HasPrefix(r.Reason, "the server was starved of CPU") {
			t.Skip("the machine starved the server under R4's CPU bound: the second signal was not needed")
		}
		if !strings.Contains(r.Reason, "no thread of it retried without blocking") || strings.Contains(r.Reason, "spins") {
			t.Errorf("R4 inconclusive for another reason: %s; want its CPU over the bound and its threads blocking, both said", r.Reason)
		}
	case conformance.Pass:
		t.Skip("the server used less CPU than R4's bound at the full table: this machine did not give it enough to test the second signal")
	default:
		t.Errorf("R4 %s: %s", r.Verdict, r.Reason)
	}
}

// The reference mutant that spins at EMFILE (lt, no-emfile-shed: the
// level-triggered listener stays readable and its loop retries it) fails
// R4 on two signals: its CPU, and a loop thread that never blocks or the
// listener its epoll set keeps ready.
func TestR4SpinnerFailsOnBothSignals(t *testing.T) {
	t.Parallel() // a child process target: see TestMain
	cfg := reactors.DefaultConfig()
	cfg.Faults.NoEMFILEShed = true
	r := runCaseOn(t, "R4", conformance.Process{Design: reactors.LT, Config: &cfg, Command: []string{testbin.Path(t, "cmd/reactorlab")}}, conformance.Options{})
	secondSignal := strings.Contains(r.Reason, "blocked less than once per") || strings.Contains(r.Reason, "looks within the window")
	if r.Verdict != conformance.Fail || r.Cause != conformance.CauseClaim || !strings.Contains(r.Reason, "spins") || !secondSignal {
		t.Errorf("R4 on the spinning mutant: %s (%s): %s; want a claim failure naming the spin with a second signal: the thread that never blocked, or the listener every wait finds ready", r.Verdict, r.Cause, r.Reason)
	}
	// The failure carries diagnose's account of the loop threads, taken
	// while the table was still full.
	if !slices.ContainsFunc(r.Evidence, func(e string) bool { return strings.HasPrefix(e, "diagnose: thread ") }) {
		t.Errorf("R4's failure evidence carries no diagnosis of the server's loop threads: %q", r.Evidence)
	}
}

// The same spinning mutant, its loop pinned at nice 10 to a CPU where a
// thread of this test burns at nice 0, gets about a tenth of that CPU:
// under R4's CPU bound. Its loop thread still wanted the CPU all the
// window and never blocked: R4 must fail it, or at worst say it was
// starved, never pass it on the CPU the machine refused it. A run found such a starved spinner at 111 ms of a
// 500 ms window (bound 125 ms), passed.
func TestR4CatchesAStarvedSpinner(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpus[len(cpus)-1]
	exe := testbin.Path(t, "cmd/reactorlab")
	defer burnOn(t, cpu)()
	cfg := reactors.DefaultConfig()
	cfg.Faults.NoEMFILEShed = true
	cfg.LoopCPUs, cfg.ControlSched = []int{cpu}, "nice:10"
	r := runCaseOn(t, "R4", conformance.Process{Design: reactors.LT, Config: &cfg, Command: []string{exe}}, conformance.Options{})
	if r.Verdict == conformance.Fail && strings.HasPrefix(r.Reason, "idle conn") {
		t.Skipf("the loop was starved past serving an idle connection before any descriptor pressure: R4 failed it on that, and never reached the full table (%s)", r.Reason)
	}
	if r.Verdict == conformance.Fail && r.Cause == conformance.CauseClaim && strings.Contains(r.Reason, "spins") && !strings.Contains(r.Reason, "starved") {
		t.Skipf("the loop got more CPU than R4's bound: this machine could not starve it (%s)", r.Reason)
	}
	switch {
	case r.Verdict == conformance.Fail && r.Cause == conformance.CauseClaim && strings.Contains(r.Reason, "though starved of CPU"):
	case r.Verdict == conformance.Inconclusive && strings.HasPrefix(r.Reason, "the server was starved of CPU"):
		// At worst: its loop blocked more often than r4SpinnerLimit
		// allows a spinner (its runtime parks it after preemptions in
		// system calls), so no spin is named, but its CPU under the
		// bound is not passed either.
		t.Logf("R4 inconclusive on the starved spinner, saying so: %s", r.Reason)
	default:
		t.Errorf("R4 on a starved spinner: %s (%s): %s; want a claim failure naming the spin and the starvation, or at worst inconclusive saying it was starved", r.Verdict, r.Cause, r.Reason)
	}
}

// A black box that spins while idle (examples/echo --bug busy-idle), at
// nice 10 on a CPU a thread of this process keeps busy, gets about a
// tenth of it: less CPU than W2's bound, and no reactor counters to count
// its waits. W2 must not pass it: the scheduler's account of its threads
// names the spin (a thread that asked for the window and rarely blocked)
// or, at worst, says it was starved.
func TestW2CatchesAStarvedBlackBoxSpinner(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpus[len(cpus)-1]
	echo := testbin.Path(t, "examples/echo")
	defer burnOn(t, cpu)()
	argv := []string{"nice", "-n", "10", "taskset", "-c", strconv.Itoa(cpu), echo, "--listen", "{addr}", "--bug", "busy-idle"}
	r := runCaseOn(t, "W2", conformance.Command{Argv: argv}, conformance.Options{})
	switch {
	case r.Verdict == conformance.Fail && r.Cause == conformance.CauseClaim && strings.Contains(r.Reason, "though starved of CPU"):
	case r.Verdict == conformance.Inconclusive && strings.HasPrefix(r.Reason, "the server was starved of CPU"):
		t.Logf("W2 inconclusive on the starved spinner, saying so")
	case r.Verdict == conformance.Fail && r.Cause == conformance.CauseClaim:
		t.Skipf("the spinner got more CPU than W2's bound: this machine could not starve it (%s)", r.Reason)
	default:
		t.Errorf("W2 on a starved black-box spinner: %s (%s): %s; want a claim failure naming the spin and the starvation, or at worst inconclusive saying it was starved", r.Verdict, r.Cause, r.Reason)
	}
}
