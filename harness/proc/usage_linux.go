//go:build linux

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/reactorlab/reactorlab/internal/procfs"
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
// generator itself), from its /proc stat, status and descriptor table. A
// zombie counts as exited.
func ReadUsage(pid int) (Usage, error) {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return Usage{}, exitedIfGone(pid, err)
	}
	if st.Zombie() {
		return Usage{}, fmt.Errorf("pid %d: %w (zombie)", pid, ErrExited)
	}
	status, err := procfs.ReadStatus(pid)
	if err != nil {
		return Usage{}, exitedIfGone(pid, err)
	}
	fds, err := procfs.CountFds(pid)
	if err != nil {
		return Usage{}, exitedIfGone(pid, err)
	}
	return Usage{
		UserNs: st.UTime * clockTick, SysNs: st.STime * clockTick,
		RSS: status.RSS, PeakRSS: status.PeakRSS, Threads: status.Threads, Fds: fds,
	}, nil
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
	if _, err := os.Stat(procfs.SchedstatPath(pid)); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(procfs.Dir(pid)); err == nil {
			return Schedstat{}, fmt.Errorf("pid %d: %w", pid, ErrNoSchedstat)
		}
		return Schedstat{}, exitedIfGone(pid, err)
	}
	tids, err := procfs.Tasks(pid)
	if err != nil {
		return Schedstat{}, exitedIfGone(pid, err)
	}
	var sum Schedstat
	for _, tid := range tids {
		s, err := procfs.ReadTaskSchedstat(pid, tid)
		if gone(err) {
			continue // the thread ended after the listing
		}
		if err != nil {
			return Schedstat{}, fmt.Errorf("pid %d: task %d: %w", pid, tid, err)
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
	s, err := procfs.ReadTaskSchedstat(pid, tid)
	if gone(err) {
		if _, serr := os.Stat(procfs.SchedstatPath(procfs.Self)); errors.Is(serr, fs.ErrNotExist) {
			return Schedstat{}, fmt.Errorf("task %d of pid %d: %w", tid, pid, ErrNoSchedstat)
		}
		return Schedstat{}, fmt.Errorf("task %d of pid %d: %w", tid, pid, ErrExited)
	}
	if err != nil {
		return Schedstat{}, fmt.Errorf("task %d of pid %d: %w", tid, pid, err)
	}
	return Schedstat(s), nil
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
	tids, err := procfs.Tasks(pid)
	if err != nil {
		return nil, exitedIfGone(pid, err)
	}
	var out []ThreadAffinity
	for _, tid := range tids {
		st, err := procfs.ReadTaskStatus(pid, tid)
		if gone(err) {
			continue // the thread ended after the listing
		}
		if err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
		if st.CPUList == "" {
			return nil, fmt.Errorf("pid %d: task %d status has no Cpus_allowed_list", pid, tid)
		}
		out = append(out, ThreadAffinity{Tid: tid, CPUList: st.CPUList})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pid %d: %w (no threads)", pid, ErrExited)
	}
	slices.SortFunc(out, func(a, b ThreadAffinity) int { return a.Tid - b.Tid })
	return out, nil
}

// gone says that a /proc read failed because its process or thread has
// ended.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}

// exitedIfGone turns the error of a /proc read of a process that no longer
// exists into one that wraps ErrExited.
func exitedIfGone(pid int, err error) error {
	if gone(err) {
		return fmt.Errorf("pid %d: %w: %w", pid, ErrExited, err)
	}
	return fmt.Errorf("pid %d: %w", pid, err)
}
