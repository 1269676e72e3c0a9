//go:build linux

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var labCheck = sync.OnceValue(func() error { return CheckLab(context.Background()) })

// needLab skips the test, with the kernel's reason, where the kernel
// refuses this process a lab (found by trying), and fails it where the lab
// is broken, or where it is refused though it must work (LabRequired: root
// in the initial user namespace, or REACTORLAB_REQUIRE_LAB=1), so that a
// bug of ours in the lab turns CI red instead of skipping every lab test.
func needLab(t *testing.T) {
	t.Helper()
	skip, err := labVerdict(labCheck())
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
}

// labVerdict is needLab's decision on CheckLab's error: a reason to skip,
// an error to fail with, or neither (the lab works).
func labVerdict(checkErr error) (skip string, fail error) {
	switch {
	case checkErr == nil:
		return "", nil
	case !errors.Is(checkErr, ErrLabUnavailable):
		return "", fmt.Errorf("the lab is broken: %w", checkErr)
	}
	if must, why := LabRequired(); must {
		return "", fmt.Errorf("a lab must work here (%s), yet: %w", why, checkErr)
	}
	return fmt.Sprintf("no lab here: %v", checkErr), nil
}

// twoCPUs is a placement on two distinct CPUs this process may use, or
// Unpinned on a machine with one.
func twoCPUs(t *testing.T) CPUs {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for i := 0; i < maxCPU && len(cpus) < 2; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		t.Logf("one CPU: running unpinned")
		return Unpinned
	}
	return CPUs{Server: cpus[0], Client: cpus[1]}
}

// echoSpec is a small valid run: test-echo and a test-client that
// exchanges a few bytes with it.
func echoSpec(mode Mode, cpus CPUs) LabSpec {
	return LabSpec{
		Server:  Proc{Argv: []string{"@test-echo"}},
		Client:  Proc{Argv: []string{"@test-client", "{addr}"}},
		CPUs:    cpus,
		Mode:    mode,
		Timeout: 30 * time.Second,
		Ready:   10 * time.Second,
		Grace:   2 * time.Second,
	}
}

// noGoroutineLeak fails t if goroutines started during the test are still
// running at its end, after a bounded wait.
func noGoroutineLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func mustRun(t *testing.T, spec LabSpec) *LabResult {
	t.Helper()
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v\nresult: %s", err, dump(res))
	}
	return res
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// checkPinned fails t unless every thread seen of the process was on cpu.
func checkPinned(t *testing.T, name string, p *ProcResult, cpu int) {
	t.Helper()
	if p.CPU != cpu || !p.AffinityOK || len(p.AffinityStart) == 0 {
		t.Errorf("%s: CPU %d, affinity ok %v, at start %v", name, p.CPU, p.AffinityOK, p.AffinityStart)
	}
	if cpu < 0 {
		return
	}
	for _, a := range append(slices.Clone(p.AffinityStart), p.AffinityEnd...) {
		if a.CPUs != strconv.Itoa(cpu) {
			t.Errorf("%s: thread %d on %q, want %d", name, a.Tid, a.CPUs, cpu)
		}
	}
}

func decodeJSON[T any](t *testing.T, what string, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %q: %v", what, b, err)
	}
	return v
}

// One run on loopback: both processes pinned (every thread), measured,
// stopped; their output captured; nothing left behind.
func TestRunLoopback(t *testing.T) {
	noGoroutineLeak(t)
	cpus := twoCPUs(t)
	res := mustRun(t, echoSpec(ModeLoopback, cpus))
	if !res.Valid || res.Mode != ModeLoopback || res.Fallback != "" {
		t.Fatalf("want a valid loopback run:\n%s", dump(res))
	}
	if !strings.HasPrefix(res.Addr, "127.0.0.1:") || res.Control != res.Addr {
		t.Errorf("addresses %s, %s", res.Addr, res.Control)
	}
	checkRun(t, res, cpus)
	if res.Sysctls["net.core.somaxconn"] == "" {
		t.Errorf("the host's sysctls are not recorded: %v", res.Sysctls)
	}
}

// checkRun checks what every valid echo run must show.
func checkRun(t *testing.T, res *LabResult, cpus CPUs) (echoStats, clientReport) {
	t.Helper()
	srv, cli := res.Server, res.Client
	checkPinned(t, "server", srv, cpus.Server)
	checkPinned(t, "client", cli, cpus.Client)
	st := decodeJSON[echoStats](t, "server stdout", srv.Stdout)
	rep := decodeJSON[clientReport](t, "client stdout", cli.Stdout)
	if rep.Echo != "hello" || st.Conns < 1 {
		t.Errorf("echo %q, server saw %d connections", rep.Echo, st.Conns)
	}
	if srv.Code != 0 || srv.SelfExit || srv.Killed || cli.Code != 0 || !cli.SelfExit || cli.TimedOut {
		t.Errorf("exits: server %+v, client %+v", srv, cli)
	}
	for _, p := range []*ProcResult{srv, cli} {
		if p.UserNs+p.SysNs <= 0 || p.MaxRSS < 1<<20 || p.Elapsed <= 0 {
			t.Errorf("%v: CPU %d+%d ns, max RSS %d, elapsed %v: no rusage", p.Argv, p.UserNs, p.SysNs, p.MaxRSS, p.Elapsed)
		}
	}
	if srv.Samples < 1 || srv.Sampled.PeakRSS <= 0 {
		t.Errorf("server: %d samples, %+v", srv.Samples, srv.Sampled)
	}
	if len(res.Audit.Diffs) != 0 {
		t.Errorf("audit: %v", res.Audit.Diffs)
	}
	return st, rep
}

// One run in the lab: the veth carries the traffic between two private
// network namespaces, neither the host's; the sysctls are set in both and
// not on the host; a control address is served and waited for.
func TestRunLab(t *testing.T) {
	needLab(t)
	noGoroutineLeak(t)
	cpus := twoCPUs(t)
	hostSomaxconn, _ := os.ReadFile("/proc/sys/net/core/somaxconn")
	spec := echoSpec(ModeLab, cpus)
	spec.Control = true
	spec.Server.Argv = []string{"@test-echo", "--control", "{control}"}
	spec.Client.Argv = []string{"@test-client", "{control}", "{addr}"}
	spec.Sysctls = map[string]string{"net.core.somaxconn": "1234"}
	res := mustRun(t, spec)
	if !res.Valid || res.Mode != ModeLab {
		t.Fatalf("want a valid lab run:\n%s", dump(res))
	}
	if res.Addr != "198.18.0.1:9000" || res.Control != "198.18.0.1:9001" {
		t.Errorf("addresses %s, %s", res.Addr, res.Control)
	}
	st, rep := checkRun(t, res, cpus)
	hostNet, _ := os.Readlink("/proc/self/ns/net")
	if st.Netns == rep.Netns || st.Netns == hostNet || rep.Netns == hostNet ||
		!slices.Contains(res.Namespaces, st.Netns) || !slices.Contains(res.Namespaces, rep.Netns) {
		t.Errorf("server in %s, client in %s, host %s, lab %v", st.Netns, rep.Netns, hostNet, res.Namespaces)
	}
	if host, _, _ := strings.Cut(rep.Local, ":"); host != LabClientIP {
		t.Errorf("client's local address %s, want %s: not over the veth", rep.Local, LabClientIP)
	}
	for _, w := range []whereami{st.whereami, rep.whereami} {
		if w.Somaxconn != "1234" || w.PortRange != "1024 65535" {
			t.Errorf("sysctls in %s: somaxconn %s, port range %s", w.Netns, w.Somaxconn, w.PortRange)
		}
	}
	if res.Sysctls["net.core.somaxconn"] != "1234" {
		t.Errorf("recorded sysctls %v", res.Sysctls)
	}
	if now, _ := os.ReadFile("/proc/sys/net/core/somaxconn"); string(now) != string(hostSomaxconn) {
		t.Errorf("the host's somaxconn changed: %q → %q", hostSomaxconn, now)
	}
	// net, pid and mnt of the lab child (user too, if rootless), and the
	// two sides' network namespaces.
	if n := len(res.Namespaces); n < 5 {
		t.Errorf("lab namespaces %v", res.Namespaces)
	}
}

// Many runs, in the lab and on loopback: no thread of this process is
// ever left in a network namespace, or on a CPU mask, it did not start
// with (Run also checks this at the end of every run, in its audit).
func TestNoThreadLeftAbroad(t *testing.T) {
	noGoroutineLeak(t)
	mine := func() (netns, masks []string) {
		n, err := threadNetns()
		if err != nil {
			t.Fatal(err)
		}
		m, err := threadCPUs()
		if err != nil {
			t.Fatal(err)
		}
		return n, m
	}
	netns0, masks0 := mine()
	if len(netns0) != 1 {
		t.Fatalf("threads in %v before any run", netns0)
	}
	modes := []Mode{ModeLoopback}
	if labCheck() == nil {
		modes = append(modes, ModeLab)
	}
	cpus := twoCPUs(t)
	const runs = 10
	for i := range runs {
		spec := echoSpec(modes[i%len(modes)], cpus)
		spec.Client.Argv = []string{"@test-client", "--hold", "0s", "{addr}"}
		res := mustRun(t, spec)
		if !res.Valid {
			t.Fatalf("run %d invalid: %v", i, res.Invalid)
		}
	}
	netns1, masks1 := mine()
	if !slices.Equal(netns0, netns1) {
		t.Errorf("threads' network namespaces: %v before, %v after %d runs", netns0, netns1, runs)
	}
	for _, m := range masks1 {
		if !slices.Contains(masks0, m) {
			t.Errorf("a thread is on CPUs %s after the runs; masks before: %v", m, masks0)
		}
	}
}

// A leak planted in this process during a run marks the run invalid, with
// the leak named: a descriptor kept on one of the lab's namespaces (which
// keeps that namespace alive), a process left running, and (as root) a
// link that appears in, or disappears from, the host's namespace.
func TestPlantedLeakMarksRunInvalid(t *testing.T) {
	noGoroutineLeak(t)
	// A name of this test's own: a concurrent test binary's links are not
	// ours to add or remove.
	link := "rltest" + strconv.Itoa(os.Getpid())
	cases := []struct {
		name  string
		lab   bool
		root  bool
		setup func(t *testing.T) // before the run
		plant func(t *testing.T, up labUp) (undo func())
		want  []string
	}{{
		name: "descriptor on the lab's network namespace",
		lab:  true,
		plant: func(t *testing.T, up labUp) func() {
			f, err := os.Open("/proc/" + strconv.Itoa(up.LabPid) + "/ns/net")
			if err != nil {
				t.Error(err)
				return func() {}
			}
			return func() { f.Close() }
		},
		want: []string{"was opened during the run and is still open", "is reachable: descriptor"},
	}, {
		name: "process left running",
		plant: func(t *testing.T, up labUp) func() {
			c := exec.Command(selfExe)
			c.Env = append(os.Environ(), RoleEnv+"=test-sleep")
			if err := c.Start(); err != nil {
				t.Error(err)
				return func() {}
			}
			return func() { c.Process.Kill(); c.Wait() }
		},
		want: []string{"a descendant of this one, is still running"},
	}, {
		name: "host link appeared",
		root: true,
		plant: func(t *testing.T, up labUp) func() {
			addTestLink(t, link)
			return func() {}
		},
		want: []string{":" + link + " appeared", ":" + link + "p appeared"},
	}, {
		name:  "host link disappeared",
		root:  true,
		setup: func(t *testing.T) { addTestLink(t, link) },
		plant: func(t *testing.T, up labUp) func() {
			if err := delTestLink(link); err != nil {
				t.Error(err)
			}
			return func() {}
		},
		want: []string{":" + link + " disappeared", ":" + link + "p disappeared"},
	}}
	t.Cleanup(func() { testHooks.up = nil; testHooks.links = nil })
	// The audit watches the lab's own link names on the host, and these:
	// the planted links stand for a veth leaked into the host.
	testHooks.links = []string{link, link + "p"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode := ModeLoopback
			if c.lab {
				needLab(t)
				mode = ModeLab
			}
			if c.root && os.Geteuid() != 0 {
				t.Skip("adding a link to the host's namespace takes root")
			}
			if c.setup != nil {
				if c.setup(t); t.Failed() {
					t.FailNow()
				}
			}
			var undo func()
			testHooks.up = func(up labUp) { undo = c.plant(t, up) }
			res, err := Run(context.Background(), echoSpec(mode, Unpinned))
			testHooks.up = nil
			if undo != nil {
				undo()
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Valid {
				t.Fatalf("a run with a planted leak is valid:\n%s", dump(res))
			}
			inv := strings.Join(res.Invalid, "\n")
			for _, w := range c.want {
				if !strings.Contains(inv, w) {
					t.Errorf("invalid reasons lack %q:\n%s", w, inv)
				}
			}
			t.Logf("invalid, as it must be: %q", res.Invalid)
		})
	}
}

// addTestLink adds a link called name to this thread's (the host's)
// network namespace, and removes it when the test ends: a veth pair (the
// lab needs the veth driver anyway; a kernel may lack dummy), whose peer
// is name+"p". It reports failure with t.Error, so that a run it is
// planted in goes on to its end.
func addTestLink(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(func() { delTestLink(name) })
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}); err != nil {
		t.Errorf("add link %s: %v", name, err)
	}
}

// delTestLink removes the link called name (and so its peer), if it is
// there.
func delTestLink(name string) error {
	l, err := netlink.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find link %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("remove link %s: %w", name, err)
	}
	return nil
}

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
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := make(chan harnessOut, 4)
	go harnessLines(t, out, lines)

	// Wait for the harness to say everything is up.
	var up *labUp
	select {
	case o, ok := <-lines:
		if !ok || o.Up == nil {
			t.Fatalf("the harness said %+v before anything was up", o)
		}
		up = o.Up
	case <-time.After(20 * time.Second):
		t.Fatal("the harness did not report its run up within 20 s")
	}
	// The run's processes: everything below the harness (keeper, run
	// child, server, its grandchild, client), named with their start
	// times so that a reused pid is not taken for one of them.
	procs, err := readProcs()
	if err != nil {
		t.Fatal(err)
	}
	var run []procEntry
	for _, pid := range mustSubtree(t, cmd.Process.Pid)[1:] {
		for _, p := range procs {
			if p.pid == pid && p.state != "Z" {
				run = append(run, p)
			}
		}
	}
	// Whatever the test leaves alive, it kills; the zombies of the run,
	// orphaned to this process, it reaps.
	defer reapRun(run)
	var roles []string
	for _, p := range run {
		roles = append(roles, fmt.Sprintf("%d:%s", p.pid, roleOf(p.pid)))
	}
	t.Logf("up: namespaces %v, processes %v", up.Namespaces, roles)
	for _, r := range []string{"test-echo", "test-sleep", "test-client"} {
		if !slices.ContainsFunc(roles, func(s string) bool { return strings.HasSuffix(s, ":"+r) }) {
			t.Fatalf("want the server (test-echo), its grandchild (test-sleep) and the client (test-client); found %v", roles)
		}
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

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var left []string
	for {
		left = nil
		if mode == ModeLab {
			if left, err = reachable(up.Namespaces, os.Getpid()); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range run {
			if stillRuns(p) {
				left = append(left, fmt.Sprintf("process %d (%s) still runs", p.pid, p.comm))
			}
		}
		if links, err := hostLinks(); err != nil || !slices.Equal(links, links0) {
			left = append(left, "host links "+strings.Join(links, " ")+", were "+strings.Join(links0, " "))
		}
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
func stillRuns(p procEntry) bool {
	procs, err := readProcs()
	if err != nil {
		return true
	}
	for _, q := range procs {
		if q.pid == p.pid && q.start == p.start {
			return q.state != "Z" && q.state != "X"
		}
	}
	return false
}

// reapRun kills each process of run that still runs and reaps those that
// are this process's children (orphans of the killed harness come to this
// process, a child subreaper).
func reapRun(run []procEntry) {
	for _, p := range run {
		if stillRuns(p) {
			unix.Kill(p.pid, unix.SIGKILL)
		}
	}
	deadline := time.Now().Add(time.Second)
	for _, p := range run {
		for time.Now().Before(deadline) {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
			if pid == p.pid || err != nil { // reaped, or not this process's child
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// inPidNS lists the processes whose PID namespace is ns.
func inPidNS(t *testing.T, ns string) []int {
	t.Helper()
	procs, err := readProcs()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range procs {
		if isMember(p.pid, ns) {
			pids = append(pids, p.pid)
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

// As user nobody, a lab run succeeds through a user namespace. The test
// binary is copied where nobody may execute it. It skips where this
// process cannot switch users, and where the harness finds the lab
// unavailable only if an independent probe agrees that the kernel refuses
// nobody a user namespace (rootlessRefusal); otherwise a refusal is a bug
// of ours and fails the test.
func TestRootless(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "harness-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "harness.test")
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := echoSpec(ModeLab, twoCPUs(t))
	arg, _ := json.Marshal(spec)
	rs := resultLines(startHarness(t, bin, asNobody(), string(arg)))
	if len(rs) != 1 {
		t.Fatalf("want one result, got %+v", rs)
	}
	r := rs[0]
	if r.Unavailable {
		why := rootlessRefusal(t, bin)
		if why == "" {
			t.Fatalf("the harness says the kernel refuses nobody a lab (%s), yet the kernel lets nobody make a user and a network namespace", r.Error)
		}
		t.Skipf("the kernel refuses nobody a lab: %s (the harness: %s)", why, r.Error)
	}
	if r.Error != "" || !r.Result.Valid || r.Result.Mode != ModeLab || !r.Result.UserNS {
		t.Fatalf("rootless lab run: %s\n%s", r.Error, dump(r.Result))
	}
	t.Logf("rootless lab run valid: %d lab namespaces, server %v", len(r.Result.Namespaces), r.Result.Server.Argv)
}

// nobody is the uid and gid TestRootless runs the harness as.
const nobody = 65534

func asNobody() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
		Pdeathsig:  syscall.SIGKILL,
	}
}

// rootlessRefusal says why the kernel refuses user nobody unprivileged
// user namespaces, or "" if it does not, found without the harness: the
// sysctls that forbid them (Debian's kernel.unprivileged_userns_clone=0,
// user.max_user_namespaces=0, Ubuntu's AppArmor
// kernel.apparmor_restrict_unprivileged_userns=1), else a probe: bin, as
// nobody, starts a child that calls a plain unshare(CLONE_NEWUSER |
// CLONE_NEWNET) (test-userns-probe).
func rootlessRefusal(t *testing.T, bin string) string {
	t.Helper()
	for _, c := range []struct{ path, refuses string }{
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		if b, err := os.ReadFile(c.path); err == nil && strings.TrimSpace(string(b)) == c.refuses {
			return strings.ReplaceAll(strings.TrimPrefix(c.path, "/proc/sys/"), "/", ".") + " = " + c.refuses
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), RoleEnv+"=test-userns-probe")
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = asNobody()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the user namespace probe as nobody: %v: %s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "ok" {
		return "as nobody, " + s
	}
	return ""
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// Where the kernel refuses network namespaces (here, really: a user
// namespace whose user.max_net_namespaces is N makes the clone or unshare
// of any network namespace beyond the Nth below it fail with ENOSPC), Mode
// auto runs on loopback and records why, and Mode lab fails with that
// reason (ErrLabUnavailable), whether the keeper's clone of the lab child
// is refused (N = 0) or the lab child's unshare of the server's namespace
// (N = 1: the lab child's own is the one allowed).
func TestFallbackWhereRefused(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	auto := echoSpec(ModeAuto, twoCPUs(t))
	lab := auto
	lab.Mode = ModeLab
	a1, _ := json.Marshal(auto)
	a2, _ := json.Marshal(lab)
	attr := &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	for _, c := range []struct {
		max  int
		step string
	}{
		{0, "clone net,pid,mnt: fork/exec /proc/self/exe: no space left on device"},
		{1, "create the server's network namespace: unshare: no space left on device"},
	} {
		t.Run(fmt.Sprintf("max_net_namespaces=%d", c.max), func(t *testing.T) {
			outs := startHarness(t, exe, attr, "--max-netns="+strconv.Itoa(c.max), string(a1), string(a2))
			if len(outs) > 0 && strings.HasPrefix(outs[0].Error, "limit:") {
				t.Skipf("cannot limit network namespaces here: %s", outs[0].Error)
			}
			rs := resultLines(outs)
			if len(rs) != 2 {
				t.Fatalf("want two results, got %s", dump(outs))
			}
			ra, rl := rs[0], rs[1]
			if ra.Error != "" || ra.Result == nil || !ra.Result.Valid || ra.Result.Mode != ModeLoopback ||
				!strings.Contains(ra.Result.Fallback, c.step) {
				t.Errorf("auto: want a valid loopback run with the refusal (%s) recorded: %s\n%s", c.step, ra.Error, dump(ra.Result))
			}
			if !rl.Unavailable || !strings.Contains(rl.Error, c.step) || rl.Result == nil || rl.Result.Server != nil {
				t.Errorf("lab: want ErrLabUnavailable with the kernel's reason (%s) and nothing started: %q\n%s", c.step, rl.Error, dump(rl.Result))
			}
			if ra.Result != nil {
				t.Logf("auto fell back: %s", ra.Result.Fallback)
			}
		})
	}
}

// Every way a run can go wrong is bounded, and marks the run invalid:
// a client that never exits is stopped at its deadline, a server that
// ignores SIGTERM is killed after the grace.
func TestStuckProcessesAreStopped(t *testing.T) {
	noGoroutineLeak(t)
	for _, mode := range []Mode{ModeLoopback, ModeLab} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == ModeLab {
				needLab(t)
			}
			spec := echoSpec(mode, Unpinned)
			spec.Server.Argv = []string{"@test-echo", "--ignore-term"}
			spec.Client.Argv = []string{"@test-client", "--hold", "1h", "{addr}"}
			spec.Grace = 100 * time.Millisecond
			spec.Timeout = minTimeout(spec.Grace)
			t0 := time.Now()
			res, err := Run(context.Background(), spec)
			el := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			if el > spec.Timeout {
				t.Errorf("Run took %v, bound %v", el, spec.Timeout)
			}
			inv := strings.Join(res.Invalid, "\n")
			for _, w := range []string{"client: did not exit in its time", "server: did not exit within the grace"} {
				if !strings.Contains(inv, w) {
					t.Errorf("invalid reasons lack %q:\n%s", w, inv)
				}
			}
			if !res.Server.Killed || !res.Client.TimedOut || len(res.Audit.Diffs) != 0 {
				t.Errorf("server killed %v, client timed out %v, audit %v", res.Server.Killed, res.Client.TimedOut, res.Audit.Diffs)
			}
			t.Logf("stopped in %v (bound %v)", el.Round(time.Millisecond), spec.Timeout)
		})
	}
}

// A server that exits by itself mid-run is a crash, unless the spec says
// it may (it obeys a STOP) and its status is 0.
func TestServerExitsByItself(t *testing.T) {
	noGoroutineLeak(t)
	for _, c := range []struct {
		mayExit bool
		code    string
		valid   bool
	}{{false, "0", false}, {true, "0", true}, {true, "4", false}} {
		spec := echoSpec(ModeLoopback, Unpinned)
		spec.Server.Argv = []string{"@test-echo", "--exit-after", "10ms", "--exit-code", c.code}
		spec.Client.Argv = []string{"@test-client", "--hold", "300ms", "{addr}"}
		spec.ServerMayExit = c.mayExit
		res := mustRun(t, spec)
		if res.Valid != c.valid || !res.Server.SelfExit {
			t.Errorf("may exit %v, exit %s: valid %v (want %v), self exit %v: %q",
				c.mayExit, c.code, res.Valid, c.valid, res.Server.SelfExit, res.Invalid)
		}
	}
}

// A server that never listens fails the run after Ready, naming the step;
// a cancelled context kills the lab and everything in it at once. Neither
// leaves anything behind.
func TestFailuresAreBounded(t *testing.T) {
	noGoroutineLeak(t)
	t.Run("never ready", func(t *testing.T) {
		spec := echoSpec(ModeAuto, Unpinned)
		spec.Server.Argv = []string{"@test-echo", "--no-listen"}
		spec.Ready = 300 * time.Millisecond
		t0 := time.Now()
		res, err := Run(context.Background(), spec)
		var sf *StartFailure
		if !errors.As(err, &sf) || sf.Cause != StartNoListener || !strings.Contains(err.Error(), "@test-echo --no-listen") ||
			!strings.Contains(err.Error(), "nothing accepted connections on") || !strings.Contains(err.Error(), "within 300ms") {
			t.Fatalf("err %v, want a StartFailure naming the server, the cause (no listener) and the wait", err)
		}
		if el := time.Since(t0); el > 5*time.Second {
			t.Errorf("took %v with Ready %v", el, spec.Ready)
		}
		if res == nil || res.Valid || res.Server != nil || len(res.Audit.Diffs) != 0 {
			t.Errorf("result %s", dump(res))
		}
	})
	for _, mode := range []Mode{ModeLab, ModeLoopback} {
		t.Run("cancelled "+string(mode), func(t *testing.T) {
			if mode == ModeLab {
				needLab(t)
			}
			spec := echoSpec(mode, Unpinned)
			spec.Server.Argv = []string{"@test-echo", "--fork"}
			spec.Client.Argv = []string{"@test-client", "--hold", "1h", "{addr}"}
			ctx, cancel := context.WithCancel(context.Background())
			testHooks.up = func(labUp) { cancel() }
			t.Cleanup(func() { testHooks.up = nil })
			t0 := time.Now()
			res, err := Run(ctx, spec)
			if err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("err %v, want the run killed", err)
			}
			if el := time.Since(t0); el > 5*time.Second {
				t.Errorf("took %v", el)
			}
			if res.Valid || len(res.Audit.Diffs) != 0 || (mode == ModeLab) != (len(res.Namespaces) >= 5) {
				t.Errorf("result %s", dump(res))
			}
		})
	}
}

// Bad specs are refused with the field named, before anything starts; no
// input panics.
func TestSpecRefused(t *testing.T) {
	ok := echoSpec(ModeLoopback, Unpinned)
	cases := []struct {
		name string
		edit func(*LabSpec)
		want string
	}{
		{"empty server argv[0]", func(s *LabSpec) { s.Server.Argv = []string{""} }, "server: empty Argv"},
		{"empty client", func(s *LabSpec) { s.Client.Argv = nil }, "client: empty Argv"},
		{"empty client argv[0]", func(s *LabSpec) { s.Client.Argv = []string{""} }, "client: empty Argv"},
		{"unknown role", func(s *LabSpec) { s.Server.Argv = []string{"@nope"} }, `no role "nope"`},
		{"internal role", func(s *LabSpec) { s.Client.Argv = []string{"@lab"} }, `the role "lab" is the harness's own`},
		{"bad env", func(s *LabSpec) { s.Client.Env = []string{"NOEQUALS"} }, `env "NOEQUALS"`},
		{"bad mode", func(s *LabSpec) { s.Mode = "cloud" }, `mode "cloud"`},
		{"negative grace", func(s *LabSpec) { s.Grace = -time.Second }, "grace -1s is negative"},
		{"negative server cpu", func(s *LabSpec) { s.ServerCPU = -0.5 }, "server_cpu -0.5: want a number of CPUs, 0.05..1024"},
		{"server cpu below the least", func(s *LabSpec) { s.ServerCPU = 0.01 }, "server_cpu 0.01: want a number of CPUs, 0.05..1024"},
		{"server cpu too many", func(s *LabSpec) { s.ServerCPU = 5000 }, "server_cpu 5000: want a number of CPUs, 0.05..1024"},
		{"server cpu without a server", func(s *LabSpec) { s.Server.Argv = nil; s.ServerCPU = 0.5 }, "server_cpu set, but there is no server"},
		{"short timeout", func(s *LabSpec) { s.Timeout = time.Second }, "timeout 1s leaves the client no time"},
		{"zero CPUs", func(s *LabSpec) { s.CPUs = CPUs{} }, "both sides on CPU 0"},
		{"huge CPU", func(s *LabSpec) { s.CPUs = CPUs{Server: 1 << 20, Client: -1} }, "is not a CPU number"},
		{"negative CPU", func(s *LabSpec) { s.CPUs = CPUs{Server: -7, Client: -1} }, "is not a CPU number"},
		{"CPU not allowed", func(s *LabSpec) { s.CPUs = CPUs{Server: maxCPU - 1, Client: -1} }, "is not one this process may use"},
		{"host sysctl", func(s *LabSpec) { s.Sysctls = map[string]string{"kernel.panic": "1"} }, `sysctl "kernel.panic"`},
		{"path in sysctl", func(s *LabSpec) { s.Sysctls = map[string]string{"net/../../kernel/x": "1"} }, "want a net.* key"},
		{"sysctl newline", func(s *LabSpec) { s.Sysctls = map[string]string{"net.core.somaxconn": "1\n2"} }, "want one non-empty line"},
		{"huge argv", func(s *LabSpec) { s.Client.Argv = append(s.Client.Argv, strings.Repeat("x", maxSpecSize)) }, "bytes as JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			res, err := Run(context.Background(), s)
			if err == nil || res != nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Run = %v, %v; want nil and an error containing %q", res, err, c.want)
			}
		})
	}
}

func TestParseCPUs(t *testing.T) {
	good := []struct {
		in   string
		want CPUs
	}{
		{"", Unpinned},
		{"server=0,loadgen=1", CPUs{0, 1}},
		{" server = 3 , client = 2 ", CPUs{3, 2}},
		{"loadgen=1", CPUs{-1, 1}},
		{"server=none,loadgen=0", CPUs{-1, 0}},
		{"server=-1,loadgen=0", CPUs{-1, 0}},
	}
	for _, g := range good {
		got, err := ParseCPUs(g.in)
		if err != nil || got != g.want {
			t.Errorf("ParseCPUs(%q) = %v, %v; want %v", g.in, got, err, g.want)
		}
		back, err := ParseCPUs(got.String())
		if err != nil || back != got {
			t.Errorf("%q does not read back: %v, %v", got.String(), back, err)
		}
	}
	bad := []struct{ in, want string }{
		{"server", `"server": want side=CPU`},
		{"server=", `"server=": want side=CPU`},
		{"server=0,,loadgen=1", `"": want side=CPU`},
		{"reactor=0", `unknown side "reactor"`},
		{"server=x", `server: "x" is not a CPU number`},
		{"loadgen=-2", `loadgen: "-2" is not a CPU number`},
		{"server=99999", `server: "99999" is not a CPU number`},
		{"server=0,server=1", "server given twice"},
		{"client=0,loadgen=1", "loadgen given twice"},
	}
	for _, b := range bad {
		_, err := ParseCPUs(b.in)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseCPUs(%q) error %v, want one containing %q", b.in, err, b.want)
		}
	}
	var c CPUs
	if err := c.Set("server=1,loadgen=0"); err != nil || c != (CPUs{1, 0}) {
		t.Errorf("Set: %v, %v", c, err)
	}
}

// An unknown role exits 2 and names the registered ones; a role runs with
// its args and exit status, and REACTORLAB_ROLE removed from its
// environment.
func TestRoles(t *testing.T) {
	cmd := exec.Command(selfExe)
	cmd.Env = append(os.Environ(), RoleEnv+"=nope")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitRoleUsage || !strings.Contains(string(out), "test-echo") {
		t.Errorf("unknown role: %v, %q", err, out)
	}
	cmd = exec.Command(selfExe, "a b", "-c")
	cmd.Env = append(os.Environ(), RoleEnv+"=test-args")
	out, err = cmd.Output()
	if !errors.As(err, &ee) || ee.ExitCode() != 7 || string(out) != `["a b","-c"] ""`+"\n" {
		t.Errorf("test-args: %v, %q", err, out)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a role twice did not panic")
		}
	}()
	RegisterRole("test-echo", echoRole)
}
