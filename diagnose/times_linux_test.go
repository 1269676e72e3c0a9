//go:build linux

package diagnose_test

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/internal/testbin"
)

// timesOf samples pid's threads for window and returns the figures
// between the record's first and last snapshots.
func timesOf(t *testing.T, pid int, window time.Duration) (*diagnose.LoopTimes, *diagnose.ThreadTimes) {
	t.Helper()
	stop := diagnose.StartTimes(func() ([]int, error) { return []int{pid}, nil })
	time.Sleep(window)
	rec := stop()
	if len(rec.Snapshots) < 2 {
		t.Fatalf("record: %d snapshots, error %q", len(rec.Snapshots), rec.Error)
	}
	lt, err := rec.Window(rec.Snapshots[0].At, rec.Snapshots[len(rec.Snapshots)-1].At)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples over %v, sampler CPU %.2f%% of one CPU; loop threads %+v; %d others %+v; unreadable %q",
		lt.Samples, time.Duration(lt.Window), 100*lt.SamplerCPU, lt.Loops, lt.OtherCount, lt.Others, lt.Unreadable)
	return lt, rec
}

// busiest is the loop thread that served most.
func busiest(t *testing.T, lt *diagnose.LoopTimes) diagnose.ThreadShares {
	t.Helper()
	if len(lt.Loops) == 0 {
		t.Fatal("no loop thread")
	}
	b := lt.Loops[0]
	for _, l := range lt.Loops[1:] {
		if l.Serving > b.Serving {
			b = l
		}
	}
	return b
}

// TestTimesIdleEchoIsWaiting: examples/echo with an idle client has a
// loop thread (its netpoller's) asleep in its event wait nearly all the
// window, serving and blocked next to nothing; every loop thread's
// figures sum to 1.
func TestTimesIdleEchoIsWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("a live process sampled for 600 ms")
	}
	cmd := exec.Command(testbin.Path(t, "examples/echo"), "--listen", "127.0.0.1:0", "--lifetime", "2m")
	addr := start(t, cmd, "listening on")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lt, _ := timesOf(t, cmd.Process.Pid, 600*time.Millisecond)
	waiting := false
	for _, l := range lt.Loops {
		if l.Waiting >= 0.9 && l.Serving < 0.05 && l.Blocked < 0.05 {
			waiting = true
		}
		if sum := l.Waiting + l.Serving + l.Blocked + l.Runnable + l.Unplaced; sum < 0.9 || sum > 1.1 {
			t.Errorf("thread %d: its figures sum to %.3f, want 1 within the sampling's error: %+v", l.Tid, sum, l)
		}
	}
	if !waiting {
		t.Errorf("no loop thread waiting ≥ 90%% of the window: %+v", lt.Loops)
	}
	if lt.Samples < 20 {
		t.Errorf("%d samples in 600 ms at one per %v", lt.Samples, diagnose.TimesInterval)
	}
}

// TestTimesSpinnerIsServing: a loop holding EPOLLOUT on an idle
// connection never sleeps: on a CPU (or waiting for one) all the window,
// never seen waiting.
func TestTimesSpinnerIsServing(t *testing.T) {
	if testing.Short() {
		t.Skip("a live process sampled for 500 ms")
	}
	cmd, addr := helper(t, "epollout-spin", "")
	c, err := dialHelper(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lt, _ := timesOf(t, cmd.Process.Pid, 500*time.Millisecond)
	b := busiest(t, lt)
	if b.Serving+b.Runnable < 0.9 || b.Serving < 0.5 || b.Waiting > 0.05 {
		t.Errorf("the spinning thread: %+v; want serving (with runnable) ≥ 90%% of the window, waiting under 5%%", b)
	}
}

// TestTimesSleepingLoopIsBlockedInNanosleep: a loop that waits 30 ms and
// then sleeps 100 ms in nanosleep is blocked about 3/4 of the window, in
// nanosleep, and waiting the rest.
func TestTimesSleepingLoopIsBlockedInNanosleep(t *testing.T) {
	if testing.Short() {
		t.Skip("a live process sampled for 800 ms")
	}
	cmd, addr := helper(t, "sleep-loop", "")
	c, err := dialHelper(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lt, _ := timesOf(t, cmd.Process.Pid, 800*time.Millisecond)
	var l *diagnose.ThreadShares
	for i := range lt.Loops {
		if lt.Loops[i].Blocked > 0 {
			l = &lt.Loops[i]
		}
	}
	if l == nil {
		t.Fatalf("no loop thread blocked: %+v", lt.Loops)
	}
	call, share := l.TopBlocked()
	if call != "nanosleep" && call != "clock_nanosleep" || share < 0.5 || l.Waiting < 0.1 || l.Waiting > 0.4 {
		t.Errorf("the loop thread: %+v, held most in %q (%.2f); want blocked in nanosleep ≥ 1/2 of the window, waiting 1/10..4/10", l, call, share)
	}
}

// TestTimesLoopBesideBurnersIsRunnable: a loop that wants a CPU all the
// time, pinned to one CPU beside two threads that burn it, waits for
// that CPU about twice as long as it runs: runnable ≥ 40% of the window.
func TestTimesLoopBesideBurnersIsRunnable(t *testing.T) {
	if testing.Short() {
		t.Skip("a live process sampled for 600 ms beside a burner")
	}
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset and two CPUs")
	}
	burn := exec.Command("taskset", "-c", "1", testbin.Path(t, "examples/burn"), "--cpus", "2", "--for", "1m")
	burn.Env = append(os.Environ(), "GOMAXPROCS=3")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { burn.Process.Kill(); burn.Wait() }()
	cmd, _ := helper(t, "timer-work", "1")
	time.Sleep(350 * time.Millisecond) // past its first 300 ms in its wait
	lt, _ := timesOf(t, cmd.Process.Pid, 600*time.Millisecond)
	b := busiest(t, lt)
	if b.Runnable < 0.4 || b.Serving > 0.5 {
		t.Errorf("the loop thread: %+v; want runnable ≥ 40%% of the window and serving ≤ 50%%", b)
	}
}
