package proc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoCPUController means this machine offers no cgroup CPU controller
// that this process can write: neither cgroup v2 with the cpu controller
// at /sys/fs/cgroup nor cgroup v1's cpu hierarchy.
var ErrNoCPUController = errors.New("no writable cgroup CPU controller (cgroup v2 cpu.max or v1 cpu.cfs_quota_us)")

// A CPULimit caps CPU time with the kernel's CFS bandwidth control: a
// cgroup of its own whose quota is Share × Period of CPU time per Period,
// summed over the threads of every process in it and inherited by any
// child they start. Throttled time is time they wanted a CPU and were
// refused one.
//
// Invariants: the cgroup exists from NewCPULimit's return until Release,
// holds only the processes added to it and their descendants, and is
// locked (flock on its directory) while it exists, so that sweepStale
// never takes it; Release removes it.
type CPULimit struct {
	// Share is the limit in CPUs (0.5: half of one CPU).
	Share float64
	// Period is the CFS period; the quota is Share × Period.
	Period time.Duration
	// Dir is the cgroup's directory; Version is the cgroup version (1 or 2).
	Dir     string
	Version int
	// Procs counts the processes added.
	Procs int

	lock *os.File // the directory, flock'ed until Release
}

// CPULimitStat is the kernel's account of a CPULimit (its cgroup's cpu.stat).
type CPULimitStat struct {
	// Periods is the number of periods in which the process ran; Throttled
	// how many of them ended with the quota spent and the process held back.
	Periods   int64 `json:"periods"`
	Throttled int64 `json:"throttled_periods"`
	// ThrottledTime is the total time the process was held back.
	ThrottledTime time.Duration `json:"-"`
}

// cpuQuota checks a cap and returns its quota per period (DefaultCPUPeriod
// when period is 0): share must be finite, at most MaxCPUShare, and give a
// quota of at least 1 ms; period must be 1 ms..1 s.
func cpuQuota(share float64, period time.Duration) (time.Duration, time.Duration, error) {
	if period == 0 {
		period = DefaultCPUPeriod
	}
	if period < minCPUQuota || period > time.Second {
		return 0, 0, fmt.Errorf("cpu limit: period %v: want 1ms..1s", period)
	}
	if math.IsNaN(share) || math.IsInf(share, 0) || share <= 0 || share > MaxCPUShare {
		return 0, 0, fmt.Errorf("cpu limit: share %v: want a number of CPUs > 0, at most %d", share, MaxCPUShare)
	}
	quota := time.Duration(share * float64(period))
	if quota < minCPUQuota {
		return 0, 0, fmt.Errorf("cpu limit: share %v of a %v period is a quota of %v; the kernel's least is %v", share, period, quota, minCPUQuota)
	}
	return quota, period, nil
}

// NewCPULimit makes an empty cgroup limited to share CPUs per period
// (DefaultCPUPeriod when 0); Add puts processes in it. It first sweeps
// what killed runs left (sweepStale). The caller must Release it.
func NewCPULimit(share float64, period time.Duration) (*CPULimit, error) {
	quota, period, err := cpuQuota(share, period)
	if err != nil {
		return nil, err
	}
	root, version, err := cpuCgroupRoot()
	if err != nil {
		return nil, fmt.Errorf("cpu limit: %w", err)
	}
	sweepStale(root, time.Now().Add(-staleCgroupAge))
	l := &CPULimit{Share: share, Period: period, Version: version,
		// The random part keeps two labs apart: each has its own PID
		// namespace, so their pids can be equal.
		Dir: filepath.Join(root, fmt.Sprintf("reactorlab-%d-%08x", os.Getpid(), rand.Uint32()))}
	if err := os.Mkdir(l.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cpu limit: %w", err)
	}
	if l.lock, err = lockDir(l.Dir, false); err != nil {
		return nil, errors.Join(fmt.Errorf("cpu limit: %w", err), l.Release())
	}
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }
	var writes [][2]string
	if version == 2 {
		writes = [][2]string{{"cpu.max", us(quota) + " " + us(period)}}
	} else {
		writes = [][2]string{{"cpu.cfs_period_us", us(period)}, {"cpu.cfs_quota_us", us(quota)}}
	}
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(l.Dir, w[0]), []byte(w[1]), 0); err != nil {
			return nil, errors.Join(fmt.Errorf("cpu limit: %w", err), l.Release())
		}
	}
	return l, nil
}

// Add moves the live process pid (in the caller's PID namespace) into the
// cgroup, every thread of it.
func (l *CPULimit) Add(pid int) error {
	if err := os.WriteFile(filepath.Join(l.Dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("cpu limit: pid %d: %w", pid, err)
	}
	l.Procs++
	return nil
}

// LimitCPU caps the target's CPU time: every living process of its group
// (the server behind a wrapper shell or `go run` included) is moved into a
// new CPULimit of share CPUs per period. The target must not have been
// reaped, and is not while its group is moved, so no pid is reused. The
// caller must Release the limit once the target has been reaped.
func (p *Process) LimitCPU(share float64, period time.Duration) (*CPULimit, error) {
	l, err := NewCPULimit(share, period)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil, errors.Join(fmt.Errorf("cpu limit: %s (pid %d): %w", p.name, p.pid, ErrExited), l.Release())
	}
	pids, err := groupPids(p.pid)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cpu limit: %w", err), l.Release())
	}
	for _, pid := range pids {
		if err := l.Add(pid); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: exited meanwhile
			return nil, errors.Join(err, l.Release())
		}
	}
	if l.Procs == 0 {
		return nil, errors.Join(fmt.Errorf("cpu limit: %s (pid %d): no living process in its group", p.name, p.pid), l.Release())
	}
	return l, nil
}

// lockDir opens dir and takes an exclusive flock on it; with try, it fails
// at once (EWOULDBLOCK) if another holds it.
func lockDir(dir string, try bool) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_EX
	if try {
		how |= unix.LOCK_NB
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", dir, err)
	}
	return f, nil
}

// CheckCPULimit reports whether LimitCPU can work here: a cgroup CPU
// controller exists and this process may make a cgroup in it and set its
// quota (it makes one, sets a quota and removes it). The error wraps
// ErrNoCPUController or the file system's refusal.
func CheckCPULimit() error {
	root, version, err := cpuCgroupRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, fmt.Sprintf("reactorlab-check-%d-%08x", os.Getpid(), rand.Uint32()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("cpu limit: %w", err)
	}
	file, value := "cpu.max", "10000 20000"
	if version == 1 {
		file, value = "cpu.cfs_quota_us", "10000"
	}
	err = os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
	if err != nil {
		err = fmt.Errorf("cpu limit: %w", err)
	}
	return errors.Join(err, os.Remove(dir))
}

// cpuCgroupRoot finds where a CPU-limited cgroup can be made: the cgroup v2
// root when it passes the cpu controller on to its children, else cgroup
// v1's cpu hierarchy. It changes nothing: a v2 root that does not pass the
// controller on is refused with the remedy, not reconfigured.
func cpuCgroupRoot() (string, int, error) {
	const v2 = "/sys/fs/cgroup"
	if b, err := os.ReadFile(filepath.Join(v2, "cgroup.controllers")); err == nil {
		if !hasWord(string(b), "cpu") {
			return "", 0, fmt.Errorf("%w: cgroup v2 at %s has no cpu controller", ErrNoCPUController, v2)
		}
		sub, err := os.ReadFile(filepath.Join(v2, "cgroup.subtree_control"))
		if err != nil {
			return "", 0, fmt.Errorf("%w: %w", ErrNoCPUController, err)
		}
		if !hasWord(string(sub), "cpu") {
			return "", 0, fmt.Errorf("%w: %s does not pass the cpu controller to its children (as root: echo +cpu > %s/cgroup.subtree_control)",
				ErrNoCPUController, v2, v2)
		}
		return v2, 2, nil
	}
	for _, dir := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
		if _, err := os.Stat(filepath.Join(dir, "cpu.cfs_quota_us")); err == nil {
			return dir, 1, nil
		}
	}
	return "", 0, ErrNoCPUController
}

func hasWord(list, w string) bool {
	for f := range strings.FieldsSeq(list) {
		if f == w {
			return true
		}
	}
	return false
}

// staleCgroupAge is how old an empty cgroup of ours must be before
// sweepStale removes it: far longer than the moment between making a
// cgroup and moving its process in, so a concurrent run's is never taken.
const staleCgroupAge = time.Minute

// sweepStale removes the "reactorlab-" cgroups under root that were made
// before cutoff and that no live CPULimit holds (each holds a flock on its
// directory until Release): what a run killed before its Release (SIGKILL)
// left, once its processes are gone. A cgroup with a process in it cannot
// be removed either. Errors are ignored, as a sweep is only tidying.
func sweepStale(root string, cutoff time.Time) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "reactorlab-") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if info, err := e.Info(); err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		f, err := lockDir(dir, true)
		if err != nil {
			continue // held by a live limit, or gone
		}
		os.Remove(dir)
		f.Close()
	}
}

// Stat reads the kernel's account of the limit.
func (l *CPULimit) Stat() (CPULimitStat, error) {
	b, err := os.ReadFile(filepath.Join(l.Dir, "cpu.stat"))
	if err != nil {
		return CPULimitStat{}, fmt.Errorf("cpu limit: %w", err)
	}
	var st CPULimitStat
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "nr_periods":
			st.Periods = n
		case "nr_throttled":
			st.Throttled = n
		case "throttled_time": // v1, ns
			st.ThrottledTime = time.Duration(n)
		case "throttled_usec": // v2
			st.ThrottledTime = time.Duration(n) * time.Microsecond
		}
	}
	return st, nil
}

// Release removes the limit's cgroup and drops its lock. Call it once the
// limited processes have been reaped: a cgroup with a task in it cannot be
// removed, and Release then fails after waiting up to a second for the
// tasks to be gone (an exiting task leaves its cgroup a moment after it is
// reaped).
func (l *CPULimit) Release() error {
	err := l.remove()
	if l.lock != nil {
		l.lock.Close()
		l.lock = nil
	}
	return err
}

func (l *CPULimit) remove() error {
	deadline := time.Now().Add(time.Second)
	for {
		err := os.Remove(l.Dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cpu limit: removing %s: %w", l.Dir, err)
		}
		time.Sleep(10 * time.Millisecond) // no event says a cgroup emptied (v1)
	}
}
