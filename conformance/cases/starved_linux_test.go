//go:build linux

package cases

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// starvedTarget is an in-process reference reactor whose loop thread is
// pinned to one CPU at nice 10 (Config.LoopCPUs, Config.ControlSched)
// beside a busy thread at nice 0 there: the loop gets about a tenth of
// that CPU (weights 110 against 1024).
type starvedTarget struct {
	conformance.InProcess
	started []conformance.Instance
	cpu0    time.Duration // the loop's CPU time once it had started
}

func (t *starvedTarget) Start(ctx context.Context, setup conformance.Setup) (conformance.Instance, error) {
	inst, err := t.InProcess.Start(ctx, setup)
	if err != nil {
		return nil, err
	}
	u, err := inst.Usage()
	if err != nil {
		return inst, err
	}
	t.started = append(t.started, inst)
	t.cpu0 = u.CPU
	return inst, nil
}

// TestW2CatchesAStarvedSpinner: a loop that spins on EPOLLOUT but gets
// only a tenth of a CPU (the conformance suite shares CI's two cores with
// other packages' tests) uses less CPU than W2's 25% bound; W2 must still
// fail it, by the reactor's count of epoll_waits. CI once passed this
// mutant for prio on CPU alone.
func TestW2CatchesAStarvedSpinner(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpus[len(cpus)-1]
	defer burnOn(t, cpu)()

	cfg := reactors.DefaultConfig()
	cfg.Faults.PermanentEPOLLOUT = true
	cfg.LoopCPUs, cfg.ControlSched = []int{cpu}, "nice:10"
	target := &starvedTarget{InProcess: conformance.InProcess{Design: reactors.LT, Config: &cfg}}
	w2, _ := Lookup("W2")
	start := time.Now()
	// No start check: the case's instance is the only one, and elapsed is
	// the case's.
	results, err := conformance.RunAll(context.Background(), target, []conformance.Case{w2}, conformance.Options{NoStartCheck: true})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(target.started) != 1 {
		t.Fatalf("W2 started %d instances, want 1", len(target.started))
	}
	end, err := target.started[0].Usage()
	if err != nil {
		t.Fatal(err)
	}
	share := float64(end.CPU-target.cpu0) / float64(elapsed)
	r := results[0]
	t.Logf("the spinning loop got %.1f%% of a CPU over the case; W2 %s: %s\n%s", 100*share, r.Verdict, r.Reason, strings.Join(r.Log, "\n"))
	if share >= 0.2 {
		t.Skipf("the loop got %.0f%% of a CPU, enough for W2's CPU bound alone to catch it: this machine could not starve it", 100*share)
	}
	if r.Verdict != conformance.Fail || r.Cause != conformance.CauseClaim || !strings.Contains(r.Reason, "epoll") {
		t.Errorf("W2 on a starved spinning loop: %s (%s): %s; want a claim failure on its epoll_waits", r.Verdict, r.Cause, r.Reason)
	}
}

// burnOn keeps a thread of this process busy on cpu, at nice 0, until
// the returned stop is called (which waits for it to end). GOMAXPROCS is
// raised by one meanwhile, so the burner takes no P the test needs.
func burnOn(t *testing.T, cpu int) (stop func()) {
	t.Helper()
	prevProcs := runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	var stopped atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	burnerErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		// The thread stays locked, so it is discarded at exit rather than
		// handed, pinned, to the next goroutine.
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		err := unix.SchedSetaffinity(0, &set)
		burnerErr <- err
		for err == nil && !stopped.Load() { // spinning is the point
		}
	}()
	stop = func() {
		stopped.Store(true)
		wg.Wait()
		runtime.GOMAXPROCS(prevProcs)
	}
	if err := <-burnerErr; err != nil {
		stop()
		t.Fatalf("pinning the busy thread to CPU %d: %v", cpu, err)
	}
	return stop
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}
