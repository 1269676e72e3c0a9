package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
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
// > 0, and returns the CPU time it used from the moment the limit held it
// (the child starts, and may spin, before the cgroup is made and it is
// moved in: on a loaded machine that took long enough for 250 ms of
// unlimited spinning) and the limit's account.
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
		if lim, err = NewCPULimit(share, 0); err == nil {
			err = lim.Add(c.Process.Pid)
		}
		if err != nil {
			c.Process.Kill()
			c.Wait()
			if lim != nil {
				lim.Release()
			}
			if errors.Is(err, ErrNoCPUController) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
				t.Skip("cannot limit a process's CPU here:", err)
			}
			t.Fatal(err)
		}
	}
	var before time.Duration // CPU spent before the limit held it
	if lim != nil {
		u, err := ReadUsage(c.Process.Pid)
		if err == nil {
			before = time.Duration(u.UserNs + u.SysNs)
		}
		if err != nil {
			t.Fatalf("the spinner's CPU before its limit: %v", err)
		}
	}
	start := time.Now()
	time.Sleep(d) // the measured period itself, not a synchronisation
	c.Process.Kill()
	c.Wait()
	wall := time.Since(start)
	ru := c.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - before
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
	t.Logf("share %v: %v of CPU in %v (and %v before the limit held it); %+v", share, cpu, wall, before, st)
	return cpu, st
}

// TestLimitCPUCapsABusyProcess limits a spinner to a tenth of a CPU for a
// second. CFS bandwidth control allows share × wall plus at most a period's
// quota of slack: the bound below is 1.25 × share × wall + 2 periods
// (165 ms). The kernel's account must show the spinner held back for most
// of the second (a unit slip, µs for ns, would show 1,000 times less). The
// same spinner unlimited, even beside two busy threads on two CPUs, gets a
// third of a CPU or more, far above the bound: the test shows that too.
func TestLimitCPUCapsABusyProcess(t *testing.T) {
	noLeaks(t)
	const share, wall = 0.1, time.Second
	bound := time.Duration(1.25*share*float64(wall)) + 2*DefaultCPUPeriod
	cpu, st := spinCPU(t, share, wall)
	if cpu > bound {
		t.Errorf("limited to %v CPU, the spinner used %v in %v (bound %v)", share, cpu, wall, bound)
	}
	if cpu < 10*time.Millisecond {
		t.Errorf("the spinner used only %v: did it run?", cpu)
	}
	if st.Throttled == 0 || st.ThrottledTime < wall/4 {
		t.Errorf("the kernel throttled %d of %d periods, %v in all: want most of the %v", st.Throttled, st.Periods, st.ThrottledTime, wall)
	}
	if free, _ := spinCPU(t, 0, wall); free <= bound {
		t.Errorf("unlimited, the spinner used %v, within the limited bound %v: the test cannot tell a limit from none", free, bound)
	}
}

func TestCPUQuotaRefusesBadShares(t *testing.T) {
	for _, c := range []struct {
		share  float64
		period time.Duration
	}{{0, 0}, {-1, 0}, {0.01, 0}, {1, 100 * time.Microsecond}, {1, 2 * time.Second}, {5000, 0}, {math.NaN(), 0}, {math.Inf(1), 0}} {
		if q, p, err := cpuQuota(c.share, c.period); err == nil {
			t.Errorf("cpuQuota(share %v, period %v) = %v, %v: no error", c.share, c.period, q, p)
		} else {
			t.Logf("share %v, period %v: %v", c.share, c.period, err)
		}
	}
	if q, p, err := cpuQuota(0.5, 0); err != nil || q != 10*time.Millisecond || p != DefaultCPUPeriod {
		t.Errorf("cpuQuota(0.5, default) = %v, %v, %v; want 10ms per %v", q, p, err, DefaultCPUPeriod)
	}
	if q, _, err := cpuQuota(MinCPUShare, 0); err != nil || q != minCPUQuota {
		t.Errorf("cpuQuota(MinCPUShare) = %v, %v; want %v", q, err, minCPUQuota)
	}
}

// TestSweepStaleCgroups: what a killed run left (an empty cgroup of ours,
// made before the cutoff, that no limit holds) is removed; a newer one, one
// a live limit holds, and a cgroup that is not ours are kept. The sweep
// runs in a private parent cgroup, never the root, so it cannot take what
// a concurrent test or run is using.
func TestSweepStaleCgroups(t *testing.T) {
	if err := CheckCPULimit(); err != nil {
		t.Skip("cannot make cgroups here:", err)
	}
	root, _, err := cpuCgroupRoot()
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	mk := func(parent, name string) string {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
		return dir
	}
	t.Cleanup(func() { // children first
		for i := len(dirs) - 1; i >= 0; i-- {
			os.Remove(dirs[i])
		}
	})
	parent := mk(root, fmt.Sprintf("sweeptest-%d-%08x", os.Getpid(), rand.Uint32()))
	old, held, young, foreign := mk(parent, "reactorlab-old"), mk(parent, "reactorlab-held"), mk(parent, "reactorlab-young"), mk(parent, "other")
	info, err := os.Stat(young)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{old, held, foreign} {
		if err := os.Chtimes(d, time.Time{}, info.ModTime().Add(-time.Second)); err != nil {
			t.Skip("cannot date a cgroup here:", err)
		}
	}
	lock, err := lockDir(held, false)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	sweepStale(parent, info.ModTime())
	for _, c := range []struct {
		dir  string
		kept bool
	}{{old, false}, {held, true}, {young, true}, {foreign, true}} {
		_, err := os.Stat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v (%v)", c.dir, kept, c.kept, err)
		}
	}
}
