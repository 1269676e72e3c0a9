//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// SIGKILL of the harness mid-run leaves, within a second, no process of
// the run alive (the server's grandchild included, which it forked into
// its own process group), in the lab and on loopback; in the lab, no
// process in any of the lab's namespaces and no descriptor or mount that
// refers to one of them; and the host's links as they were.
//
// Unreachable means freed: a namespace lives only while something refers
// to it: a task in it, an open descriptor of it (an nsfs file), a mount of
// it, or a namespace below it, which is itself reachable only through the
// same kinds of references. Once none is left, no process can enter, name
// or use it again, and the kernel frees it (the network namespace's
// cleanup, which destroys its veth end and so the pair, is deferred to a
// kernel worker, but nothing can observe the namespace meanwhile). A
// zombie would count: it keeps its PID namespace, and /proc/<pid>/ns/pid
// of a zombie still opens. That is why a keeper stands between the harness
// and the lab's PID 1 and reaps it: an orphaned lab child would wait for
// the host's init to reap it, which on this VM takes seconds. The keeper's
// own zombie, reaped by init in its own time, holds nothing of the lab;
// it must not be alive. On loopback no PID namespace kills the grandchild:
// the keeper, a child subreaper, inherits it when the server dies, and
// kills it.
func TestKillHarnessLeavesNothing(t *testing.T) {
	for _, mode := range []Mode{ModeLab, ModeLoopback} {
		t.Run(string(mode), func(t *testing.T) { killHarness(t, mode) })
	}
}

func killHarness(t *testing.T, mode Mode) {
	if mode == ModeLab {
		needLab(t)
	}
	links0, err := hostLinks()
	if err != nil {
		t.Fatal(err)
	}
	// Orphans of the killed harness (its keeper, and so the lab) come to
	// this process, so that everything the harness started stays in this
	// process's tree, where reachable looks (it cannot look at every
	// process: namespace names are reused by labs that other test binaries
	// run meanwhile).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("become a child subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cmd, lines := startHeldRun(t, mode)
	defer cmd.Wait()
	defer cmd.Process.Kill()
	up := awaitUp(t, lines)
	// Whatever the test leaves alive, it kills; the zombies of the run,
	// orphaned to this process, it reaps.
	var run []proc.ProcStat
	defer func() { reapRun(run) }()
	checkRunUp(t, mode, up, cmd.Process.Pid, &run)

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var left []string
	for {
		left = leftBehind(t, mode, up, run, links0)
		if len(left) == 0 || time.Since(killed) > time.Second {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Fatalf("1 s after SIGKILL of the harness:\n%s", strings.Join(left, "\n"))
	}
	t.Logf("nothing left %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// startHeldRun starts this test binary as the test-harness role with a
// run in mode whose server forks a grandchild and whose client holds for
// an hour, and returns it with the lines it prints. The caller kills and
// waits for it.
func startHeldRun(t *testing.T, mode Mode) (*exec.Cmd, chan harnessOut) {
	spec := echoSpec(mode, twoCPUs(t))
	spec.Server.Argv = []string{"@test-echo", "--fork"}
	spec.Client.Argv = []string{"@test-client", "--hold", "1h", "{addr}"}
	spec.Timeout = time.Minute
	arg, _ := json.Marshal(spec)
	cmd := exec.Command(selfExe, string(arg))
	cmd.Env = append(os.Environ(), RoleEnv+"=test-harness")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan harnessOut, 4)
	go harnessLines(t, out, lines)
	return cmd, lines
}

// awaitUp waits for the harness to say everything is up.
func awaitUp(t *testing.T, lines <-chan harnessOut) *labUp {
	select {
	case o, ok := <-lines:
		if !ok || o.Up == nil {
			t.Fatalf("the harness said %+v before anything was up", o)
		}
		return o.Up
	case <-time.After(20 * time.Second):
		t.Fatal("the harness did not report its run up within 20 s")
	}
	return nil
}

// runProcesses are the run's processes: everything below the harness
// (keeper, run child, server, its grandchild, client), named with their
// start times so that a reused pid is not taken for one of them.
func runProcesses(t *testing.T, harness int) []proc.ProcStat {
	procs, err := proc.Processes()
	if err != nil {
		t.Fatal(err)
	}
	var run []proc.ProcStat
	for _, pid := range mustSubtree(t, harness)[1:] {
		for _, p := range procs {
			if p.Pid == pid && p.State != "Z" {
				run = append(run, p)
			}
		}
	}
	return run
}

// checkRunUp checks that the server, its grandchild and the client run,
// and in the lab that they are in the lab's PID namespace with the lab
// child, and leaves the run's processes (runProcesses) in *run. A process's role
// is read from /proc/PID/environ, and one seen between fork and its own
// exec is not yet what it will be (CI saw the client so once, "?"): the
// processes are listed again for up to 2 s until the three are there.
func checkRunUp(t *testing.T, mode Mode, up *labUp, harness int, run *[]proc.ProcStat) {
	var roles, missing []string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		*run, roles, missing = runProcesses(t, harness), nil, nil
		for _, p := range *run {
			roles = append(roles, fmt.Sprintf("%d:%s", p.Pid, roleOf(p.Pid)))
		}
		for _, r := range []string{"test-echo", "test-sleep", "test-client"} {
			if !slices.ContainsFunc(roles, func(s string) bool { return strings.HasSuffix(s, ":"+r) }) {
				missing = append(missing, r)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("up: namespaces %v, processes %v", up.Namespaces, roles)
	if len(missing) > 0 {
		t.Fatalf("want the server (test-echo), its grandchild (test-sleep) and the client (test-client); %v missing, found %v", missing, roles)
	}
	var pidNS string
	for _, n := range up.Namespaces {
		if strings.HasPrefix(n, "pid:") {
			pidNS = n
		}
	}
	if mode == ModeLab {
		if members := inPidNS(t, pidNS); len(members) < 4 || !slices.Contains(members, up.LabPid) {
			t.Fatalf("want the lab child %d, the server, its grandchild and the client in %s; found %v", up.LabPid, pidNS, members)
		}
	}
}

// leftBehind is what of the run is still there: in the lab, its
// namespaces still reachable; its processes still running; host links
// that differ from links0.
func leftBehind(t *testing.T, mode Mode, up *labUp, run []proc.ProcStat, links0 []string) []string {
	var left []string
	if mode == ModeLab {
		var err error
		if left, err = reachable(up.Namespaces, os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range run {
		if stillRuns(p) {
			left = append(left, fmt.Sprintf("process %d (%s) still runs", p.Pid, p.Comm))
		}
	}
	if links, err := hostLinks(); err != nil || !slices.Equal(links, links0) {
		left = append(left, "host links "+strings.Join(links, " ")+", were "+strings.Join(links0, " "))
	}
	return left
}

// roleOf is the role a process of this program was started as: the
// REACTORLAB_ROLE of its initial environment (RunRoleIfChild removes it
// from Go's copy, not from the one /proc shows).
func roleOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if r, ok := strings.CutPrefix(kv, RoleEnv+"="); ok {
			return r
		}
	}
	return "?"
}

// mustSubtree lists pid and its descendants.
func mustSubtree(t *testing.T, pid int) []int {
	t.Helper()
	tree, err := subtree(pid)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// stillRuns reports whether p is alive: the same process (pid and start
// time), not a zombie.
func stillRuns(p proc.ProcStat) bool {
	procs, err := proc.Processes()
	if err != nil {
		return true
	}
	for _, q := range procs {
		if q.Pid == p.Pid && q.Start == p.Start {
			return q.State != "Z" && q.State != "X"
		}
	}
	return false
}

// reapRun kills each process of run that still runs and reaps those that
// are this process's children (orphans of the killed harness come to this
// process, a child subreaper).
func reapRun(run []proc.ProcStat) {
	for _, p := range run {
		if stillRuns(p) {
			unix.Kill(p.Pid, unix.SIGKILL)
		}
	}
	deadline := time.Now().Add(time.Second)
	for _, p := range run {
		for time.Now().Before(deadline) {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
			if pid == p.Pid || err != nil { // reaped, or not this process's child
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// inPidNS lists the processes whose PID namespace is ns.
func inPidNS(t *testing.T, ns string) []int {
	t.Helper()
	procs, err := proc.Processes()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range procs {
		if isMember(p.Pid, ns) {
			pids = append(pids, p.Pid)
		}
	}
	return pids
}

func isMember(pid int, ns string) bool {
	l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return err == nil && l == ns
}

// startHarness starts the test binary as test-harness with args, as attr
// says, and returns its output lines. It skips the test, with the reason,
// if the kernel refuses to start it so.
func startHarness(t *testing.T, exe string, attr *syscall.SysProcAttr, args ...string) []harnessOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), RoleEnv+"=test-harness")
	cmd.Dir = filepath.Dir(exe)
	cmd.SysProcAttr = attr
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if cmd.ProcessState == nil { // never started: the kernel refused the credentials or namespace
		t.Skipf("cannot start the harness as asked: %v", err)
	}
	var outs []harnessOut
	ch := make(chan harnessOut, 16)
	go harnessLines(t, strings.NewReader(string(b)), ch)
	for o := range ch {
		outs = append(outs, o)
	}
	if err != nil || len(outs) == 0 || !outs[len(outs)-1].Done {
		t.Fatalf("harness: %v\nstdout: %s\nstderr: %s", err, b, stderr.String())
	}
	return outs
}

// resultLines keeps the result lines of a test-harness output.
func resultLines(outs []harnessOut) []harnessOut {
	var r []harnessOut
	for _, o := range outs {
		if o.Result != nil || (o.Error != "" && o.Up == nil) {
			r = append(r, o)
		}
	}
	return r
}
