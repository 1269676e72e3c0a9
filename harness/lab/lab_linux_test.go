//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var labCheck = sync.OnceValue(func() error { return Check(context.Background()) })

// needLab skips the test, with the kernel's reason, where the kernel
// refuses this process a lab (found by trying), and fails it where the lab
// is broken, or where it is refused though it must work (Required: root
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

// labVerdict is needLab's decision on Check's error: a reason to skip,
// an error to fail with, or neither (the lab works).
func labVerdict(checkErr error) (skip string, fail error) {
	switch {
	case checkErr == nil:
		return "", nil
	case !errors.Is(checkErr, ErrUnavailable):
		return "", fmt.Errorf("the lab is broken: %w", checkErr)
	}
	if must, why := Required(); must {
		return "", fmt.Errorf("a lab must work here (%s), yet: %w", why, checkErr)
	}
	return fmt.Sprintf("no lab here: %v", checkErr), nil
}

// twoCPUs is a placement on two distinct CPUs this process may use, or
// Unpinned on a machine with one.
func twoCPUs(t *testing.T) Placement {
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
	return Placement{Server: ListPlacement(cpus[0]), Client: ListPlacement(cpus[1])}
}

// echoSpec is a small valid run: test-echo and a test-client that
// exchanges a few bytes with it.
func echoSpec(mode Mode, cpus Placement) Spec {
	return Spec{
		Server:    Proc{Argv: []string{"@test-echo"}},
		Client:    Proc{Argv: []string{"@test-client", "{addr}"}},
		Placement: cpus,
		Mode:      mode,
		Timeout:   30 * time.Second,
		Ready:     10 * time.Second,
		Grace:     2 * time.Second,
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

func mustRun(t *testing.T, spec Spec) *Result {
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

// checkPinned fails t unless every thread seen of the process was on
// its side's set.
func checkPinned(t *testing.T, name string, p *ProcResult, set SidePlacement) {
	t.Helper()
	if !p.Placement.Equal(set) || !p.AffinityOK || len(p.AffinityStart) == 0 {
		t.Errorf("%s: CPUs %s, affinity ok %v (%v), at start %v", name, p.Placement, p.AffinityOK, p.AffinityBad, p.AffinityStart)
	}
	if !set.Pinned() {
		return
	}
	for _, a := range append(slices.Clone(p.AffinityStart), p.AffinityEnd...) {
		if a.CPUList != set.String() {
			t.Errorf("%s: thread %d on %q, want %s", name, a.Tid, a.CPUList, set)
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
func checkRun(t *testing.T, res *Result, cpus Placement) (echoStats, clientReport) {
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
	if host, _, _ := strings.Cut(rep.Local, ":"); host != ClientIP {
		t.Errorf("client's local address %s, want %s: not over the veth", rep.Local, ClientIP)
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
	t.Cleanup(func() { testHooks.up = nil; testHooks.links = nil })
	// The audit watches the lab's own link names on the host, and these:
	// the planted links stand for a veth leaked into the host.
	testHooks.links = []string{link, link + "p"}
	for _, c := range plantedLeaks(link) {
		t.Run(c.name, func(t *testing.T) { c.check(t) })
	}
}

// plantedLeak is a leak planted in a run, and what the run's invalid
// reasons must say of it.
type plantedLeak struct {
	name  string
	lab   bool
	root  bool
	setup func(t *testing.T) // before the run
	plant func(t *testing.T, up labUp) (undo func())
	want  []string
}

// plantedLeaks are the leaks TestPlantedLeakMarksRunInvalid plants: a
// descriptor of the lab's namespace, a process, a host link that appears
// (link) and one that disappears.
func plantedLeaks(link string) []plantedLeak {
	return []plantedLeak{{
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
}

// check runs a loopback run (a lab run if c.lab) with the leak planted
// once the run is up, and checks that the run is invalid for it.
func (c plantedLeak) check(t *testing.T) {
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
