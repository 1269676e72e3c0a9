//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// clockTick is the length of a /proc/<pid>/stat CPU tick: USER_HZ, 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK) is not callable
// from Go; TestClockTick checks `getconf CLK_TCK`).
const clockTick = 10_000_000 // ns

// Usage samples the process's resource use from /proc. It returns an error
// wrapping ErrExited once the process has exited.
func (p *Process) Usage() (Usage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return Usage{}, fmt.Errorf("usage of %s (pid %d): %w", p.name, p.pid, ErrExited)
	}
	u, err := ReadUsage(p.pid)
	if err != nil {
		return Usage{}, fmt.Errorf("usage of %s: %w", p.name, err)
	}
	return u, nil
}

// ThreadCPU returns the CPU time of the process's living threads in
// nanoseconds, summed from /proc/<pid>/task/*/schedstat, which, unlike the
// 10 ms ticks of Usage, is exact to the nanosecond. Threads that have exited
// are not counted (Usage counts them), so take differences over a window in
// which the thread set is stable. It returns an error wrapping ErrNoSchedstat
// on a kernel without schedstat, and one wrapping ErrExited once the process
// has exited.
func (p *Process) ThreadCPU() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return 0, fmt.Errorf("thread CPU of %s (pid %d): %w", p.name, p.pid, ErrExited)
	}
	ns, err := ReadThreadCPU(p.pid)
	if err != nil {
		return 0, fmt.Errorf("thread CPU of %s: %w", p.name, err)
	}
	return ns, nil
}

// Group lists the living processes of the target's process group, the
// leader first (while it lives). A command started through a wrapper (a
// shell, `go run`) is served by a process other than the leader: Usage and
// ThreadCPU measure the leader only, GroupUsage and GroupSchedstat the whole
// group.
func (p *Process) Group() ([]int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil, fmt.Errorf("group of %s (pid %d): %w", p.name, p.pid, ErrExited)
	}
	return groupPids(p.pid)
}

// GroupUsage is the sum of Usage over the living processes of the group.
// PeakRSS is the sum of their peaks, which may exceed the group's true peak.
// A member that exits takes its CPU time out of the sum, so a difference of
// two samples is meaningful only while membership is stable (a server and
// its idle wrapper).
func (p *Process) GroupUsage() (Usage, error) {
	var sum Usage
	err := p.eachMember("group usage", func(pid int) error {
		u, err := ReadUsage(pid)
		sum.UserNs += u.UserNs
		sum.SysNs += u.SysNs
		sum.RSS += u.RSS
		sum.PeakRSS += u.PeakRSS
		sum.Fds += u.Fds
		sum.Threads += u.Threads
		return err
	})
	return sum, err
}

// GroupSchedstat is the sum of ReadSchedstat over the living processes of
// the group, with the same caveats as GroupUsage.
func (p *Process) GroupSchedstat() (Schedstat, error) {
	var sum Schedstat
	err := p.eachMember("group schedstat", func(pid int) error {
		s, err := ReadSchedstat(pid)
		sum.RunNs += s.RunNs
		sum.WaitNs += s.WaitNs
		sum.Slices += s.Slices
		return err
	})
	return sum, err
}

// eachMember calls f for every living member of the group, skipping those
// that exit meanwhile.
func (p *Process) eachMember(what string, f func(pid int) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return fmt.Errorf("%s of %s (pid %d): %w", what, p.name, p.pid, ErrExited)
	}
	pids, err := groupPids(p.pid)
	if err != nil {
		return fmt.Errorf("%s of %s: %w", what, p.name, err)
	}
	for _, pid := range pids {
		if err := f(pid); err != nil && !(pid != p.pid && errors.Is(err, ErrExited)) {
			return fmt.Errorf("%s of %s: %w", what, p.name, err)
		}
	}
	return nil
}

// groupPids scans /proc for the processes of group pgid that are not
// zombies, pgid itself first.
func groupPids(pgid int) ([]int, error) {
	procs, err := Processes()
	if err != nil {
		return nil, err
	}
	pids := []int{}
	for _, p := range procs {
		if p.Pgrp != pgid || !p.Living() {
			continue
		}
		if p.Pid == pgid {
			pids = append([]int{p.Pid}, pids...)
		} else {
			pids = append(pids, p.Pid)
		}
	}
	return pids, nil
}

// ReadUsage samples the resource use of any process by pid, as
// Process.Usage does (for example os.Getpid(), to measure the load
// generator itself). A zombie counts as exited.
func ReadUsage(pid int) (Usage, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return Usage{}, exitedIfGone(pid, err)
	}
	u, zombie, err := parseStat(stat)
	if err != nil {
		return Usage{}, fmt.Errorf("pid %d: %s/stat: %w", pid, dir, err)
	}
	if zombie {
		return Usage{}, fmt.Errorf("pid %d: %w (zombie)", pid, ErrExited)
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Usage{}, exitedIfGone(pid, err)
	}
	if err := parseStatus(status, &u); err != nil {
		return Usage{}, fmt.Errorf("pid %d: %s/status: %w", pid, dir, err)
	}
	fds, err := countEntries(dir + "/fd")
	if err != nil {
		return Usage{}, exitedIfGone(pid, err)
	}
	u.Fds = fds
	return u, nil
}

// ReadThreadCPU sums the first field of /proc/<pid>/task/*/schedstat: the
// nanoseconds each living thread of pid has run.
func ReadThreadCPU(pid int) (int64, error) {
	s, err := ReadSchedstat(pid)
	return s.RunNs, err
}

// ReadSchedstat sums /proc/<pid>/task/*/schedstat over the living threads
// of pid: the nanoseconds they ran and the nanoseconds they waited,
// runnable, on a run queue. It returns an error wrapping ErrNoSchedstat on a
// kernel without schedstat.
func ReadSchedstat(pid int) (Schedstat, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	if _, err := os.Stat(dir + "/schedstat"); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir); err == nil {
			return Schedstat{}, fmt.Errorf("pid %d: %w", pid, ErrNoSchedstat)
		}
		return Schedstat{}, exitedIfGone(pid, err)
	}
	tids, err := readNames(dir + "/task")
	if err != nil {
		return Schedstat{}, exitedIfGone(pid, err)
	}
	var sum Schedstat
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/task/" + tid + "/schedstat")
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			continue // the thread ended after the listing
		}
		if err != nil {
			return Schedstat{}, fmt.Errorf("pid %d: %w", pid, err)
		}
		s, err := parseSchedstat(b)
		if err != nil {
			return Schedstat{}, fmt.Errorf("pid %d: task %s: %w", pid, tid, err)
		}
		sum.RunNs += s.RunNs
		sum.WaitNs += s.WaitNs
		sum.Slices += s.Slices
	}
	return sum, nil
}

// ReadTaskSchedstat reads /proc/<pid>/task/<tid>/schedstat: one thread's
// run time and run-queue wait. It returns an error wrapping ErrNoSchedstat
// on a kernel without schedstat and one wrapping ErrExited once the thread
// has ended.
func ReadTaskSchedstat(pid, tid int) (Schedstat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/schedstat"
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		if _, serr := os.Stat("/proc/self/schedstat"); errors.Is(serr, fs.ErrNotExist) {
			return Schedstat{}, fmt.Errorf("task %d of pid %d: %w", tid, pid, ErrNoSchedstat)
		}
		return Schedstat{}, fmt.Errorf("task %d of pid %d: %w", tid, pid, ErrExited)
	}
	if err != nil {
		return Schedstat{}, fmt.Errorf("task %d of pid %d: %w", tid, pid, err)
	}
	s, err := parseSchedstat(b)
	if err != nil {
		return Schedstat{}, fmt.Errorf("task %d of pid %d: %w", tid, pid, err)
	}
	return s, nil
}

// parseSchedstat parses one schedstat line: "run-ns wait-ns timeslices".
func parseSchedstat(b []byte) (Schedstat, error) {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return Schedstat{}, fmt.Errorf("schedstat %q: want at least 2 fields", b)
	}
	run, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Schedstat{}, fmt.Errorf("schedstat %q: run time: %w", b, err)
	}
	wait, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Schedstat{}, fmt.Errorf("schedstat %q: run-queue wait: %w", b, err)
	}
	st := Schedstat{RunNs: run, WaitNs: wait}
	if len(f) >= 3 {
		if st.Slices, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return Schedstat{}, fmt.Errorf("schedstat %q: timeslices: %w", b, err)
		}
	}
	return st, nil
}

// Affinity lists the CPU affinity of every living thread of the process.
// It returns an error wrapping ErrExited once the process has exited.
func (p *Process) Affinity() ([]ThreadAffinity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil, fmt.Errorf("affinity of %s (pid %d): %w", p.name, p.pid, ErrExited)
	}
	ta, err := ReadAffinity(p.pid)
	if err != nil {
		return nil, fmt.Errorf("affinity of %s: %w", p.name, err)
	}
	return ta, nil
}

// ReadAffinity reads Cpus_allowed_list from /proc/<pid>/task/*/status: the
// affinity of every living thread of any process, in thread-id order.
// Affinity is a property of a thread, not of a process: each thread
// inherits its creator's mask and may change its own.
func ReadAffinity(pid int) ([]ThreadAffinity, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tids, err := readNames(dir)
	if err != nil {
		return nil, exitedIfGone(pid, err)
	}
	var out []ThreadAffinity
	for _, name := range tids {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(dir + "/" + name + "/status")
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			continue // the thread ended after the listing
		}
		if err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
		cpus, ok := statusField(b, "Cpus_allowed_list")
		if !ok {
			return nil, fmt.Errorf("pid %d: task %d status has no Cpus_allowed_list", pid, tid)
		}
		out = append(out, ThreadAffinity{Tid: tid, CPUs: cpus})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pid %d: %w (no threads)", pid, ErrExited)
	}
	slices.SortFunc(out, func(a, b ThreadAffinity) int { return a.Tid - b.Tid })
	return out, nil
}

// statusField returns the value of one "Key:\tvalue" line of a /proc
// status file.
func statusField(b []byte, key string) (string, bool) {
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// parseStat reads utime, stime and the state from /proc/<pid>/stat. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (u Usage, zombie bool, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return u, false, errors.New("no ')' after the command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return u, false, fmt.Errorf("%d fields after the command name, want >= 13", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, false, err
	}
	u.UserNs, u.SysNs = utime*clockTick, stime*clockTick
	return u, f[0] == "Z" || f[0] == "X", nil
}

// parseStatus reads VmRSS, VmHWM and Threads from /proc/<pid>/status.
// Kernel threads have no Vm lines; they stay 0.
func parseStatus(b []byte, u *Usage) error {
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "VmRSS", "VmHWM":
			kb, err := strconv.ParseInt(strings.TrimSuffix(val, " kB"), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			if key == "VmRSS" {
				u.RSS = kb << 10
			} else {
				u.PeakRSS = kb << 10
			}
		case "Threads":
			n, err := strconv.Atoi(val)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			u.Threads = n
		}
	}
	return nil
}

// readNames lists a directory without sorting it.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func countEntries(dir string) (int, error) {
	names, err := readNames(dir)
	return len(names), err
}

// exitedIfGone turns the error of a /proc read of a process that no longer
// exists into one that wraps ErrExited.
func exitedIfGone(pid int, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("pid %d: %w: %w", pid, ErrExited, err)
	}
	return fmt.Errorf("pid %d: %w", pid, err)
}
