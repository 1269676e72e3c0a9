package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// spinEnv makes the test binary a spinner: one thread busy for up to 10 s.
const spinEnv = "PROC_TEST_SPIN"

func spinFor(d time.Duration) {
	end := time.Now().Add(d)
	for n := 0; time.Now().Before(end); n++ {
	}
}

// spinCPU runs a spinner for wall time d, limited to share CPUs when share
// > 0, and returns the CPU time it used and the limit's account.
func spinCPU(t *testing.T, share float64, d time.Duration) (time.Duration, CPULimitStat) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), spinEnv+"=1")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var lim *CPULimit
	if share > 0 {
		var err error
		if lim, err = LimitCPU(c.Process.Pid, share, 0); err != nil {
			c.Process.Kill()
			c.Wait()
			if errors.Is(err, ErrNoCPUController) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
				t.Skip("cannot limit a process's CPU here:", err)
			}
			t.Fatal(err)
		}
	}
	start := time.Now()
	time.Sleep(d) // the measured period itself, not a synchronisation
	c.Process.Kill()
	c.Wait()
	wall := time.Since(start)
	ru := c.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var st CPULimitStat
	if lim != nil {
		var err error
		if st, err = lim.Stat(); err != nil {
			t.Error(err)
		}
		if err := lim.Release(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(lim.Dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("cgroup %s left behind: %v", lim.Dir, err)
		}
	}
	t.Logf("share %v: %v of CPU in %v; %+v", share, cpu, wall, st)
	return cpu, st
}

// TestLimitCPUCapsABusyProcess limits a spinner to a fifth of a CPU for a
// second. CFS bandwidth control allows share × wall plus at most a period's
// quota of slack: the bound below is 1.25 × share × wall + 2 periods, which
// an unlimited spinner (≥ half a CPU even beside a busy second core)
// exceeds; the test shows that too.
func TestLimitCPUCapsABusyProcess(t *testing.T) {
	noLeaks(t)
	const share, wall = 0.2, time.Second
	bound := time.Duration(1.25*share*float64(wall)) + 2*DefaultCPUPeriod
	cpu, st := spinCPU(t, share, wall)
	if cpu > bound {
		t.Errorf("limited to %v CPU, the spinner used %v in %v (bound %v)", share, cpu, wall, bound)
	}
	if cpu < 20*time.Millisecond {
		t.Errorf("the spinner used only %v: did it run?", cpu)
	}
	if st.Throttled == 0 {
		t.Errorf("the kernel throttled none of %d periods: the quota was never reached", st.Periods)
	}
	free, _ := spinCPU(t, 0, wall)
	if free <= bound {
		t.Errorf("unlimited, the spinner used %v, within the limited bound %v: the test cannot tell a limit from none", free, bound)
	}
}

func TestLimitCPURefusesBadShares(t *testing.T) {
	for _, c := range []struct {
		share  float64
		period time.Duration
	}{{0, 0}, {-1, 0}, {0.01, 0}, {1, 100 * time.Microsecond}, {1, 2 * time.Second}} {
		if l, err := LimitCPU(os.Getpid(), c.share, c.period); err == nil {
			l.Release()
			t.Errorf("LimitCPU(share %v, period %v): no error", c.share, c.period)
		} else {
			t.Logf("share %v, period %v: %v", c.share, c.period, err)
		}
	}
}

// TestSweepStaleCgroups: what a killed run left (an empty cgroup of ours,
// made before the cutoff) is removed; a newer one, and a cgroup that is
// not ours, are kept.
func TestSweepStaleCgroups(t *testing.T) {
	if err := CheckCPULimit(); err != nil {
		t.Skip("cannot make cgroups here:", err)
	}
	root, _, err := cpuCgroupRoot()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir) })
		return dir
	}
	suffix := fmt.Sprintf("%d-%08x", os.Getpid(), rand.Uint32())
	old, young, foreign := mk("reactorlab-sweep-old-"+suffix), mk("reactorlab-sweep-young-"+suffix), mk("other-sweep-"+suffix)
	info, err := os.Stat(young)
	if err != nil {
		t.Fatal(err)
	}
	// Everything made so far counts as old against a cutoff after it,
	// except young, whose time is the cutoff itself.
	if err := os.Chtimes(old, time.Time{}, info.ModTime().Add(-time.Second)); err != nil {
		t.Skip("cannot date a cgroup here:", err)
	}
	sweepStale(root, info.ModTime())
	for _, c := range []struct {
		dir  string
		kept bool
	}{{old, false}, {young, true}, {foreign, true}} {
		_, err := os.Stat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v (%v)", c.dir, kept, c.kept, err)
		}
	}
}
