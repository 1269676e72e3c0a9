//go:build linux

package diagnose_test

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
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
	t.Logf("%d samples over %v, sampler CPU %.2f%% of one CPU; loop threads %+v; %d others %+v; %d began, %d ended; unreadable %q",
		lt.Samples, time.Duration(lt.Window), 100*lt.SamplerCPU, lt.Loops, lt.OtherCount, lt.Others, lt.Started, lt.Ended, lt.Unreadable)
	return lt, rec
}

// loopThread is thread tid's figures, which must be a loop thread's.
func loopThread(t *testing.T, lt *diagnose.LoopTimes, tid int) diagnose.ThreadShares {
	t.Helper()
	for _, l := range lt.Loops {
		if l.Tid == tid {
			return l
		}
	}
	t.Fatalf("thread %d is not a loop thread: %+v", tid, lt.Loops)
	return diagnose.ThreadShares{}
}

// ownShares is thread tid's figures over the whole record, whether or
// not it is a loop thread (one starved by a busy machine below a tenth of
// the window's CPU, never seen in its wait, is not).
func ownShares(t *testing.T, rec *diagnose.ThreadTimes, tid int) diagnose.ThreadShares {
	t.Helper()
	var snaps []diagnose.TimesSnapshot
	for _, s := range rec.Snapshots {
		for _, th := range s.Threads {
			if th.Tid == tid {
				snaps = append(snaps, diagnose.TimesSnapshot{At: s.At, Threads: []diagnose.ThreadCount{th}})
			}
		}
	}
	if len(snaps) < 2 {
		t.Fatalf("thread %d in %d snapshots", tid, len(snaps))
	}
	lt := diagnose.Between(snaps[0], snaps[len(snaps)-1])
	if len(lt.Loops) == 1 {
		return lt.Loops[0]
	}
	return lt.Others
}

// TestTimesIdleEchoIsWaiting: examples/echo with an idle client has a
// loop thread (its netpoller's) asleep in its event wait nearly all the
// window, serving and blocked next to nothing; every loop thread's
// figures sum to 1. The window opens 300 ms after the connection: a Go
// runtime starts threads as it goes, and a thread begun within the
// window is not counted.
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
	time.Sleep(300 * time.Millisecond)
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
	if lt.Samples < 5 {
		t.Errorf("%d samples in 600 ms at one per %v", lt.Samples, diagnose.TimesInterval)
	}
}

// TestTimesSpinnerIsServing: a loop holding EPOLLOUT on an idle
// connection never sleeps: on a CPU or waiting for one all the window
// (how the two split is the machine's: other tenants of a CPU make it
// wait), never seen in its wait; on a machine that starves it below a
// tenth of the window's CPU it is no loop thread by the rule, and its
// own figures say so. A Go program's thread may be seen
// blocked in futex: a spin in system calls under a busy machine loses its
// P (the runtime's processor) and waits in futex for one.
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
	time.Sleep(200 * time.Millisecond) // its pages read in: a new process faults them in from a disk that may be busy
	_, rec := timesOf(t, cmd.Process.Pid, 500*time.Millisecond)
	b := ownShares(t, rec, cmd.Process.Pid) // the helper's loop is its main thread
	if b.Serving+b.Runnable < 0.75 || b.Waiting > 0.05 || b.Serving <= b.Waiting {
		t.Errorf("the spinning thread: %+v; want serving and runnable ≥ 75%% of the window, waiting under 5%%", b)
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
	l := loopThread(t, lt, cmd.Process.Pid)
	call, share := l.TopBlocked()
	if call != "nanosleep" && call != "clock_nanosleep" || share < 0.5 || l.Waiting < 0.1 || l.Waiting > 0.4 {
		t.Errorf("the loop thread: %+v, held most in %q (%.2f); want blocked in nanosleep ≥ 1/2 of the window, waiting 1/10..4/10", l, call, share)
	}
}

// TestTimesLoopBesideBurnersIsRunnable: a loop that waits 300 ms for its
// events (the samples see it in its wait: a loop thread, whatever CPU it
// gets), then wants a CPU all the time, pinned to one CPU beside two
// threads that burn it, waits for that CPU about twice as long as it
// runs: over a 900 ms window, runnable about 2/3 of 600 ms, 44%; the
// test asks for a quarter and more than it served.
func TestTimesLoopBesideBurnersIsRunnable(t *testing.T) {
	if testing.Short() {
		t.Skip("a live process sampled for 900 ms beside a burner")
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
	lt, _ := timesOf(t, cmd.Process.Pid, 900*time.Millisecond)
	b := loopThread(t, lt, cmd.Process.Pid)
	if b.Runnable < 0.25 || b.Runnable <= b.Serving {
		t.Errorf("the loop thread: %+v; want runnable ≥ 25%% of the window and more than it served", b)
	}
}

// TestTimesRecordEndsWithTheProcess: a process that exits (and stays a
// zombie, unreaped) within the sampling leaves no snapshot after its
// end: the record's last snapshot holds its thread, at most 250 ms after
// its exit at 300 ms (a step is 100 ms), well before the sampling's end
// at 900 ms.
func TestTimesRecordEndsWithTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("a live process sampled for 900 ms")
	}
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	began := time.Now()
	stop := diagnose.StartTimes(func() ([]int, error) { return []int{cmd.Process.Pid}, nil })
	time.Sleep(900 * time.Millisecond)
	rec := stop()
	if len(rec.Snapshots) < 2 {
		t.Fatalf("%d snapshots", len(rec.Snapshots))
	}
	last := rec.Snapshots[len(rec.Snapshots)-1]
	if len(last.Threads) != 1 || last.At.Sub(began) > 550*time.Millisecond {
		t.Errorf("the last snapshot, %v after the start, holds %d threads; want the sleeper's one, within 250 ms of its exit at 300 ms",
			last.At.Sub(began), len(last.Threads))
	}
}

// TestTimesCostIsBounded: sampling a process of 300 threads (this one:
// its goroutines each locked to a thread of its own, asleep) costs about
// 20 µs a thread, 6 ms a look, which every 20 ms would take 30% of a CPU:
// the sampler looks less often, and uses a twentieth of one CPU (5%),
// and the closing snapshot's cost beside (7.5% in all over a second).
func TestTimesCostIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("300 threads sampled for a second")
	}
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 300 {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			started.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	started.Wait()
	defer close(release)
	stop := diagnose.StartTimes(func() ([]int, error) { return []int{os.Getpid()}, nil })
	time.Sleep(time.Second)
	rec := stop()
	share := float64(rec.SamplerCPU) / float64(rec.Span)
	t.Logf("%d looks in %v, the sampler's CPU %v (%.1f%% of one CPU), %d threads in the last snapshot",
		rec.Samples, time.Duration(rec.Span), time.Duration(rec.SamplerCPU), 100*share, len(rec.Snapshots[len(rec.Snapshots)-1].Threads))
	if share > 0.075 || rec.Samples < 3 {
		t.Errorf("the sampler used %.1f%% of a CPU in %d looks; want at most 7.5%% and three looks", 100*share, rec.Samples)
	}
}

// TestTimesLoadedEchoIsNotInPageFaults: examples/echo under load, whose
// threads wake and sleep thousands of times a second, is often found
// between two states by the look (its state read asleep, then its call
// file "running"): such a look is taken again, not counted as a sleep
// outside any system call. A steady echo's pages are all in: its threads
// together spend under 2% of the window in page faults.
func TestTimesLoadedEchoIsNotInPageFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a loaded process sampled for 700 ms")
	}
	cmd := exec.Command(testbin.Path(t, "examples/echo"), "--listen", "127.0.0.1:0", "--lifetime", "2m")
	addr := start(t, cmd, "listening on")
	defer load(t, addr, -1)()
	time.Sleep(200 * time.Millisecond)
	lt, _ := timesOf(t, cmd.Process.Pid, 700*time.Millisecond)
	faults := lt.Others.BlockedIn[diagnose.OutsideCall]
	for _, l := range lt.Loops {
		faults += l.BlockedIn[diagnose.OutsideCall]
	}
	t.Logf("asleep outside any system call: %.2f%% of the window, all threads", 100*faults)
	if faults > 0.02 {
		t.Errorf("the threads were asleep outside any system call %.1f%% of the window in all; want under 2%%", 100*faults)
	}
}
