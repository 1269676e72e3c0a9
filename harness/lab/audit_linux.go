//go:build linux

package lab

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/internal/procfs"
)

// primeRuntime makes the Go runtime open what it opens once per process
// (the network poller's epoll and event descriptors) before the
// before-audit, so a run that first uses the poller is not blamed for them.
func primeRuntime() {
	if r, w, err := os.Pipe(); err == nil { // a pipe *os.File registers with the poller
		r.Close()
		w.Close()
	}
}

// takeSnapshot records what a run must leave as it found it. Errors are
// returned with the part of the snapshot that could be read.
func takeSnapshot() (Snapshot, error) {
	var s Snapshot
	var errs []error
	var err error
	if s.Fds, err = ownFds(); err != nil {
		errs = append(errs, fmt.Errorf("descriptors: %w", err))
	}
	if s.Processes, err = descendants(os.Getpid()); err != nil {
		errs = append(errs, fmt.Errorf("processes: %w", err))
	}
	if s.Links, err = hostLinks(); err != nil {
		errs = append(errs, fmt.Errorf("links: %w", err))
	}
	if s.ThreadNetns, err = threadNetns(); err != nil {
		errs = append(errs, fmt.Errorf("threads' network namespaces: %w", err))
	}
	if s.ThreadCPUs, err = threadCPUs(); err != nil {
		errs = append(errs, fmt.Errorf("threads' CPU masks: %w", err))
	}
	return s, errors.Join(errs...)
}

// audit takes the after snapshot and compares it with before, and checks
// that none of the lab's namespaces (labNS, "net:[…]") is reachable,
// retrying for up to auditSettle while it finds a difference.
func audit(before Snapshot, beforeErr error, labNS []string) Audit {
	deadline := time.Now().Add(auditSettle)
	for {
		after, err := takeSnapshot()
		diffs := compareSnapshots(before, after)
		if beforeErr != nil {
			diffs = append(diffs, "audit before the run: "+beforeErr.Error())
		}
		if err != nil {
			diffs = append(diffs, "audit after the run: "+err.Error())
		}
		if len(labNS) > 0 {
			reach, err := reachable(labNS, os.Getpid())
			if err != nil {
				diffs = append(diffs, "audit of the lab's namespaces: "+err.Error())
			}
			diffs = append(diffs, reach...)
		}
		if len(diffs) == 0 || time.Now().After(deadline) {
			return Audit{Before: before, After: after, Diffs: diffs}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// compareSnapshots names every way after differs from before that a run
// may not cause: a descriptor, process, thread namespace or thread mask
// that is new, and a host link that appeared or went.
func compareSnapshots(before, after Snapshot) []string {
	var d []string
	for _, fd := range slices.Sorted(maps.Keys(after.Fds)) {
		if t, ok := before.Fds[fd]; !ok || t != after.Fds[fd] {
			d = append(d, fmt.Sprintf("descriptor %d (%s) was opened during the run and is still open", fd, after.Fds[fd]))
		}
	}
	for _, p := range after.Processes {
		if !slices.Contains(before.Processes, p) {
			d = append(d, fmt.Sprintf("process %s, a descendant of this one, is still running", p))
		}
	}
	for _, l := range after.Links {
		if !slices.Contains(before.Links, l) {
			d = append(d, fmt.Sprintf("host link %s appeared", l))
		}
	}
	for _, l := range before.Links {
		if !slices.Contains(after.Links, l) {
			d = append(d, fmt.Sprintf("host link %s disappeared", l))
		}
	}
	for _, n := range after.ThreadNetns {
		if !slices.Contains(before.ThreadNetns, n) {
			d = append(d, fmt.Sprintf("a thread of this process is in network namespace %s, where none was before the run", n))
		}
	}
	for _, m := range after.ThreadCPUs {
		if !slices.Contains(before.ThreadCPUs, m) {
			d = append(d, fmt.Sprintf("a thread of this process is pinned to CPUs %s, where none was before the run", m))
		}
	}
	return d
}

// ownFds maps this process's descriptors to their targets. The descriptor
// of the listing itself is gone by the time its target is read, and so is
// left out.
func ownFds() (map[int]string, error) {
	table, err := procfs.ReadFds(procfs.Self)
	if err != nil {
		return nil, err
	}
	fds := map[int]string{}
	for _, f := range table {
		if f.Target != "" {
			fds[f.Num] = f.Target
		}
	}
	return fds, nil
}

// subtree lists root and every descendant of it, zombies included.
func subtree(root int) ([]int, error) {
	procs, err := proc.Processes()
	if err != nil {
		return nil, err
	}
	kids := map[int][]int{}
	for _, p := range procs {
		kids[p.PPid] = append(kids[p.PPid], p.Pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out, nil
}

// descendants lists the living (not zombie) descendants of pid as
// "pid (comm) start=ticks", sorted.
func descendants(pid int) ([]string, error) {
	procs, err := proc.Processes()
	if err != nil {
		return nil, err
	}
	kids := map[int][]proc.ProcStat{}
	for _, p := range procs {
		kids[p.PPid] = append(kids[p.PPid], p)
	}
	out := []string{}
	queue := []int{pid}
	for len(queue) > 0 {
		for _, k := range kids[queue[0]] {
			if k.Living() {
				out = append(out, fmt.Sprintf("%d (%s) start=%s", k.Pid, k.Comm, k.Start))
			}
			queue = append(queue, k.Pid)
		}
		queue = queue[1:]
	}
	slices.Sort(out)
	return out, nil
}

// hostLinks lists the links of the calling thread's network namespace
// that a run could have left there, as "index:name", sorted: those named
// as the lab names its veth ends (serverLink, clientLink; a veth made in
// the wrong namespace would appear under them), and testHooks.links. Other
// links come and go with the machine's other tenants (containers, other
// test binaries adding links of their own while this one runs) and are
// not this run's doing; watching them would make runs invalid for what
// others did.
func hostLinks() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	watched := watchedLinks()
	out := []string{}
	for _, i := range ifs {
		if slices.Contains(watched, i.Name) {
			out = append(out, strconv.Itoa(i.Index)+":"+i.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// watchedLinks are the host link names hostLinks lists.
func watchedLinks() []string {
	return append([]string{serverLink, clientLink}, testHooks.links...)
}

// threadState is one thread of this process: its id, its network
// namespace ("net:[…]") and its CPU mask (Cpus_allowed_list, "0-3").
type threadState struct {
	tid   string
	netns string
	cpus  string
}

// ownThreads reads every thread of this process through /proc/self, which
// names this process whichever PID namespace /proc was mounted for (the
// lab child reads its threads before it mounts its own /proc). Each
// thread has its own namespace and mask: /proc/self/ns/net is only the
// main thread's. A thread that ends meanwhile is left out.
func ownThreads() ([]threadState, error) {
	tids, err := procfs.Tasks(procfs.Self)
	if err != nil {
		return nil, err
	}
	var out []threadState
	for _, tid := range tids {
		t := strconv.Itoa(tid)
		n, err := os.Readlink(procfs.TaskDir(procfs.Self, tid) + "/ns/net")
		if err != nil {
			continue
		}
		st, err := procfs.ReadTaskStatus(procfs.Self, tid)
		if err != nil {
			continue
		}
		if st.CPUList == "" {
			return nil, fmt.Errorf("task %s: no Cpus_allowed_list in its status", t)
		}
		out = append(out, threadState{tid: t, netns: n, cpus: st.CPUList})
	}
	if len(out) == 0 {
		return nil, errors.New("no thread of this process could be read")
	}
	return out, nil
}

// threadNetns lists the distinct network namespaces of this process's
// threads.
func threadNetns() ([]string, error) {
	ts, err := ownThreads()
	seen := map[string]bool{}
	for _, t := range ts {
		seen[t.netns] = true
	}
	return slices.Sorted(maps.Keys(seen)), err
}

// threadCPUs lists the distinct CPU masks of this process's threads.
func threadCPUs() ([]string, error) {
	ts, err := ownThreads()
	seen := map[string]bool{}
	for _, t := range ts {
		seen[t.cpus] = true
	}
	return slices.Sorted(maps.Keys(seen)), err
}

// childBaseline records, at the run child's start, before any worker
// exists, where its threads must be again once its workers have ended: its
// own network namespace (the main thread's, which never changes) and the
// masks its threads have.
func childBaseline() (ChildAudit, error) {
	n, err := procfs.Namespace(procfs.Self, "net")
	if err != nil {
		return ChildAudit{}, err
	}
	m, err := threadCPUs()
	return ChildAudit{Netns: n, CPULists: m}, err
}

// auditChild is the run child's audit of itself, taken once both its
// processes are reaped and its workers have ended: every thread must be in
// base.Netns and on one of base.CPULists, and no descendant may be alive (in a
// lab, an orphan of the run is the lab child's, PID 1's). It retries for
// up to settle while it finds a difference: Go ends a discarded thread,
// and the kernel a SIGKILLed process, a moment later.
func auditChild(base ChildAudit, settle time.Duration) *ChildAudit {
	deadline := time.Now().Add(settle)
	for {
		a := base
		a.Diffs = nil
		ts, err := ownThreads()
		if err != nil {
			a.Diffs = append(a.Diffs, "its threads: "+err.Error())
		}
		a.Threads = len(ts)
		for _, t := range ts {
			if t.netns != base.Netns {
				a.Diffs = append(a.Diffs, fmt.Sprintf("thread %s is in network namespace %s, not the run child's own %s", t.tid, t.netns, base.Netns))
			}
			if !slices.Contains(base.CPULists, t.cpus) {
				a.Diffs = append(a.Diffs, fmt.Sprintf("thread %s is on CPUs %s, a mask none of its threads had at its start (%s)", t.tid, t.cpus, strings.Join(base.CPULists, " ")))
			}
		}
		ps, err := descendants(os.Getpid())
		if err != nil {
			a.Diffs = append(a.Diffs, "its processes: "+err.Error())
		}
		for _, p := range ps {
			a.Diffs = append(a.Diffs, fmt.Sprintf("process %s, started by the run, is still running", p))
		}
		if len(a.Diffs) == 0 || !time.Now().Before(deadline) {
			return &a
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nsKinds are the /proc/<pid>/task/<tid>/ns links through which a task
// holds a namespace.
var nsKinds = []string{"net", "pid", "pid_for_children", "mnt", "user"}

// reachable names every way one of the namespaces ns ("net:[4026532…]")
// can still be reached, as far as this process may look in /proc:
//
//   - a task (any thread, since threads of one process may be in different
//     namespaces) that is in it, or whose children will be (PID);
//   - an open descriptor that refers to it (an nsfs file);
//   - a mount of it (a bind mount of an nsfs file, like `ip netns add`
//     makes under /run/netns), in any mount namespace.
//
// A namespace is kept alive only by such references (and by namespaces
// created under it, which are themselves reached only through tasks,
// descriptors or mounts); once there are none, nothing can enter or name
// it again and the kernel frees it. What this does not see: descriptors of
// sockets created inside (which pin their network namespace) held outside
// the lab, and processes this user may not inspect.
//
// Only root and its descendants (zombies included) are looked at, and the
// mounts of their mount namespaces. A namespace is named by its inode
// number, and the kernel hands a freed number to the next namespace
// created (the lowest free one): a lab run concurrently by another process
// (another test binary of `go test ./...`, say) may hold a namespace with
// the very name of one of ours that is gone. Only this process's own tree
// can hold ours: nothing of the lab's is ever handed outside it, and every
// process of the lab descends from it (in lab mode the lab's PID namespace
// dies with the lab child, which is reaped before the audit).
func reachable(ns []string, root int) ([]string, error) {
	want := map[string]bool{}
	for _, n := range ns {
		want[n] = true
	}
	tree, err := subtree(root)
	if err != nil {
		return nil, err
	}
	var out []string
	mntSeen := map[string]bool{}
	for _, pid := range tree {
		dir := procfs.Dir(pid)
		comm, _ := os.ReadFile(dir + "/comm")
		who := fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm)))
		tids, _ := procfs.Tasks(pid)
		for _, t := range tids {
			for _, k := range nsKinds {
				if l, err := os.Readlink(procfs.TaskDir(pid, t) + "/ns/" + k); err == nil && want[l] {
					out = append(out, fmt.Sprintf("%s is reachable: task %d of %s is in it (%s)", l, t, who, k))
				}
			}
		}
		fds, _ := procfs.ReadFds(pid)
		for _, fd := range fds {
			if want[fd.Target] {
				out = append(out, fmt.Sprintf("%s is reachable: descriptor %d of %s refers to it", fd.Target, fd.Num, who))
			}
		}
		mnt, err := os.Readlink(dir + "/ns/mnt")
		if err != nil || mntSeen[mnt] {
			continue
		}
		mntSeen[mnt] = true
		mi, err := os.ReadFile(dir + "/mountinfo")
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(mi)) {
			f := strings.Fields(line)
			sep := slices.Index(f, "-")
			if len(f) < 5 || sep < 0 || sep+1 >= len(f) || f[sep+1] != "nsfs" {
				continue
			}
			if want[f[3]] {
				out = append(out, fmt.Sprintf("%s is reachable: mounted at %s in mount namespace %s (of %s)", f[3], f[4], mnt, who))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
