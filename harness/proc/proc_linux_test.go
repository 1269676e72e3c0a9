//go:build linux

package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// echoBin is examples/echo, built once by TestMain.
var echoBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Getenv(spinEnv) != "" {
		spinFor(10 * time.Second)
		return 0
	}
	dir, err := os.MkdirTemp("", "proc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	echoBin, err = BuildEcho(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// BuildEcho builds examples/echo into dir. `go test` puts its own GOROOT/bin
// first in the test's PATH, so "go" is the toolchain running the test.
func BuildEcho(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build echo: %w", err)
	}
	bin := filepath.Join(dir, "echo")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/reactorlab/reactorlab/examples/echo")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build echo: %v\n%s", err, out)
	}
	return bin, nil
}

// noLeaks fails t if, at the end of the test, goroutines started during it
// are still running or a child process of the test is left (zombies
// included), after a bounded wait.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for {
			g, kids := runtime.NumGoroutine(), children(t)
			if g <= before && len(kids) == 0 {
				if w := 2*time.Second - time.Until(deadline); w > 100*time.Millisecond {
					t.Logf("leak check settled after %v", w)
				}
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("leak: %d goroutines (was %d), children %v\n%s", g, before, kids, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// children lists the processes whose parent is this test process, each as
// "pid(comm) state".
func children(t *testing.T) []string {
	t.Helper()
	me := os.Getpid()
	names, err := readNames("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(me) {
			kids = append(kids, fmt.Sprintf("%d%s %s", pid, b[bytes.IndexByte(b, '('):i+1], f[0]))
		}
	}
	return kids
}

// groupGone waits (boundedly) until no living process is in group pgid and
// reports whether that happened. Zombies do not count: a group member that
// outlived its leader is reparented to init, which reaps it in its own time.
func groupGone(t *testing.T, pgid int) bool {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		live, err := groupPids(pgid)
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			t.Logf("group %d: %v", pgid, live)
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// roundTrip sends msg on c and reads it back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustStart(t *testing.T, spec Spec) *Process {
	t.Helper()
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

func mustStop(t *testing.T, p *Process) Exit {
	t.Helper()
	e, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The listen happens 300 ms after the start: Start must wait for it, and
// the {addr} substitution must reach the flag.
func TestStartWaitsForPort(t *testing.T) {
	noLeaks(t)
	t0 := time.Now()
	p := mustStart(t, Spec{Argv: []string{"sh", "-c", `sleep 0.3; exec "$0" --listen {addr}`, echoBin}})
	if el := time.Since(t0); el < 300*time.Millisecond {
		t.Errorf("Start returned after %v, before the target could listen", el)
	}
	roundTrip(t, dial(t, p.Addr()), "hello")
	e := mustStop(t, p)
	if e.Code != 0 || e.Signal != "" || e.Killed {
		t.Errorf("exit %v, want a clean exit on SIGTERM", e)
	}
	if !strings.Contains(e.StderrTail, "echo: listening on "+p.Addr()) {
		t.Errorf("stderr tail %q lacks the listening line", e.StderrTail)
	}
	if !groupGone(t, p.Pid()) {
		t.Errorf("pid %d or its group still exists", p.Pid())
	}
}

// With no flag the target listens on $REACTORLAB_LISTEN; Env reaches it, and
// stdout is captured whole.
func TestListenEnvAndStdout(t *testing.T) {
	noLeaks(t)
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := mustStart(t, Spec{
		Argv: []string{"sh", "-c", `echo "env=$FOO listen=$REACTORLAB_LISTEN"; exec "$0"`, echoBin},
		Env:  []string{"FOO=bar", ListenEnv + "=overridden"},
		Addr: addr,
	})
	if p.Addr() != addr {
		t.Errorf("Addr %q, want %q", p.Addr(), addr)
	}
	roundTrip(t, dial(t, addr), "via env")
	e := mustStop(t, p)
	if want := "env=bar listen=" + addr + "\n"; string(e.Stdout) != want {
		t.Errorf("stdout %q, want %q", e.Stdout, want)
	}
}

// WaitAddrs: Start waits for a second address, served here by a second echo
// in the same process group, which Stop must end too.
func TestWaitAddrs(t *testing.T) {
	noLeaks(t)
	addr2, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	p := mustStart(t, Spec{
		Argv:      []string{"sh", "-c", `(sleep 0.3; exec "$0" --listen ` + addr2 + `) & exec "$0"`, echoBin},
		WaitAddrs: []string{addr2},
	})
	if el := time.Since(t0); el < 300*time.Millisecond {
		t.Errorf("Start returned after %v, before the second address listened", el)
	}
	roundTrip(t, dial(t, addr2), "second")
	mustStop(t, p)
	if !groupGone(t, p.Pid()) {
		t.Errorf("group %d still has processes", p.Pid())
	}
}

func TestUsage(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{Argv: []string{echoBin}})
	u0, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("idle: %+v", u0)
	if u0.RSS <= 0 || u0.PeakRSS < u0.RSS || u0.RSS > 1<<30 || u0.Threads < 1 || u0.Fds < 3 {
		t.Errorf("implausible usage %+v", u0)
	}

	// Fds grows with open connections.
	const n = 20
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, p.Addr())
		roundTrip(t, conns[i], "x") // accepted by now
	}
	u1, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	// The server side of Start's probe connection may still have been
	// open in u0: allow one less.
	if u1.Fds < u0.Fds+n-1 {
		t.Errorf("Fds %d with %d connections, was %d idle", u1.Fds, n, u0.Fds)
	}

	// CPU: echo 64 MiB; both clocks see it and agree.
	c := conns[0]
	go func() {
		buf := make([]byte, 64<<10)
		for range 1024 {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.CopyN(io.Discard, c, 64<<20); err != nil {
		t.Fatal(err)
	}
	u2, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := p.ThreadCPU()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after 64 MiB: %+v, stat CPU %v, schedstat CPU %v",
		u2, time.Duration(u2.CPUNs()), time.Duration(tc))
	if u2.CPUNs() <= u0.CPUNs() || tc <= 0 {
		t.Errorf("CPU did not move: stat %d → %d ns, schedstat %d ns", u0.CPUNs(), u2.CPUNs(), tc)
	}
	// Ticks lag the exact clock by < 10 ms per thread and dead threads
	// count only in stat; allow 30 ms and 25%.
	if d := abs(u2.CPUNs() - tc); d > 30e6 && d > tc/4 {
		t.Errorf("stat CPU %d ns and schedstat CPU %d ns disagree", u2.CPUNs(), tc)
	}

	mustStop(t, p)
	if _, err := p.Usage(); !errors.Is(err, ErrExited) {
		t.Errorf("Usage after Stop: %v, want ErrExited", err)
	}
	if _, err := p.ThreadCPU(); !errors.Is(err, ErrExited) {
		t.Errorf("ThreadCPU after Stop: %v, want ErrExited", err)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Behind a wrapper the server is not the leader: Usage sees the wrapper,
// GroupUsage the server too.
func TestGroupUsage(t *testing.T) {
	noLeaks(t)
	// "; :" keeps sh from exec'ing the last command: it stays the leader.
	p := mustStart(t, Spec{Argv: []string{"sh", "-c", `"$0" --listen {addr}; :`, echoBin}})
	pids, err := p.Group()
	if err != nil || len(pids) != 2 || pids[0] != p.Pid() {
		t.Fatalf("Group() = %v, %v; want the leader %d and the echo", pids, err, p.Pid())
	}
	lead0, _ := p.Usage()
	grp0, err := p.GroupUsage()
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	for range n {
		roundTrip(t, dial(t, p.Addr()), "x")
	}
	lead1, _ := p.Usage()
	grp1, err := p.GroupUsage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %+v → %+v; group %+v → %+v", lead0, lead1, grp0, grp1)
	if lead1.Fds != lead0.Fds || grp1.Fds < grp0.Fds+n-1 || grp1.RSS <= lead1.RSS || grp1.Threads <= lead1.Threads {
		t.Error("GroupUsage does not cover the wrapped server, or Usage is not the leader's alone")
	}
	if ss, err := p.GroupSchedstat(); err != nil || ss.RunNs <= 0 {
		t.Errorf("GroupSchedstat = %+v, %v", ss, err)
	}
	e := mustStop(t, p)
	t.Logf("wrapper: %v", e)
	if !groupGone(t, p.Pid()) {
		t.Error("group left behind")
	}
}

// FdLimit is in force, soft and hard, even though a Go child raises its soft
// limit at start.
func TestFdLimit(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{Argv: []string{echoBin}, FdLimit: 64})
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", p.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(limits)) {
		if strings.HasPrefix(l, "Max open files") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 5 || f[3] != "64" || f[4] != "64" {
		t.Errorf("limits line %q, want soft and hard 64", line)
	}
}

func TestStopGraceful(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{Argv: []string{echoBin}, Grace: 5 * time.Second})
	t0 := time.Now()
	e := mustStop(t, p)
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("Stop took %v", el)
	}
	if e.Code != 0 || e.Signal != "" || e.Killed || e.Elapsed <= 0 {
		t.Errorf("exit %+v, want code 0, not killed, Elapsed > 0", e)
	}
	// A Go program has run for a few milliseconds and touched a few MiB.
	if e.UserNs+e.SysNs <= 0 || e.MaxRSS < 1<<20 || e.MaxRSS > 1<<30 {
		t.Errorf("rusage: user %d ns, sys %d ns, max RSS %d bytes", e.UserNs, e.SysNs, e.MaxRSS)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	e2, err := p.Stop()
	if err != nil || e2.String() != e.String() || e2.Elapsed != e.Elapsed {
		t.Errorf("second Stop: %v, %v; first %v", e2, err, e)
	}
}

// A process that is not a server: no address is picked, announced,
// substituted or waited for; Start returns at once.
func TestNoListen(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{
		Argv:     []string{"sh", "-c", `echo "$0 listen=${REACTORLAB_LISTEN-unset}"; sleep 0.1`, "{addr}"},
		NoListen: true,
	})
	if p.Addr() != "" {
		t.Errorf("Addr %q, want none", p.Addr())
	}
	<-p.Done() // Start did not wait for the sleep, nor does Stop now
	e := mustStop(t, p)
	if want := "{addr} listen=unset\n"; string(e.Stdout) != want {
		t.Errorf("stdout %q, want %q", e.Stdout, want)
	}
	if _, err := Start(context.Background(), Spec{Argv: []string{"true"}, NoListen: true, Addr: "127.0.0.1:1"}); !errors.Is(err, ErrNoListenAddr) {
		t.Errorf("NoListen with an Addr: %v", err)
	}
}

// Affinity lists every thread's mask: a child inherits this process's.
func TestAffinity(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{Argv: []string{echoBin}})
	own, err := ReadAffinity(os.Getpid())
	if err != nil || len(own) < 2 {
		t.Fatalf("own affinity %v, %v", own, err)
	}
	a, err := p.Affinity()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := p.Usage()
	if len(a) != u.Threads || a[0].Tid != p.Pid() {
		t.Errorf("affinity of %d threads (leader first?) %v, process has %d", len(a), a, u.Threads)
	}
	for _, ta := range a {
		if ta.CPUs != own[0].CPUs {
			t.Errorf("thread %d on %q, this process's main thread on %q", ta.Tid, ta.CPUs, own[0].CPUs)
		}
	}
	mustStop(t, p)
	if _, err := p.Affinity(); !errors.Is(err, ErrExited) {
		t.Errorf("Affinity after Stop: %v, want ErrExited", err)
	}
}

// A target that ignores SIGTERM is killed after Grace. The test holds the
// listening socket itself, so Start finds the address accepting.
func TestStopKillsAfterGrace(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := mustStart(t, Spec{
		Argv:  []string{"sh", "-c", `trap "" TERM; echo trapped >&2; sleep 60; echo done`},
		Addr:  ln.Addr().String(),
		Grace: 200 * time.Millisecond,
	})
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.StderrTail(), "trapped"); {
		if time.Now().After(deadline) {
			t.Fatal("sh never set its trap")
		}
		time.Sleep(time.Millisecond)
	}
	t0 := time.Now()
	e := mustStop(t, p)
	el := time.Since(t0)
	t.Logf("stopped in %v: %v", el, e)
	if el < 200*time.Millisecond || el > 2*time.Second {
		t.Errorf("Stop took %v, want Grace (200ms) and a little", el)
	}
	if !e.Killed || e.Signal != "killed" || e.Code != -1 {
		t.Errorf("exit %+v, want killed by SIGKILL", e)
	}
	if !groupGone(t, p.Pid()) {
		t.Errorf("group %d still has processes (the sleep?)", p.Pid())
	}
}

// A process that exits by itself: Done closes, Usage says so, Stop reports
// the exit without signalling anything.
func TestExitsByItself(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{Argv: []string{echoBin, "--lifetime", "200ms"}})
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("echo --lifetime 200ms still running after 5s")
	}
	if _, err := p.Usage(); !errors.Is(err, ErrExited) {
		t.Errorf("Usage after exit: %v, want ErrExited", err)
	}
	e := mustStop(t, p)
	if e.Code != 0 || e.Killed || e.Signal != "" {
		t.Errorf("exit %+v, want 0", e)
	}
}

func TestStartFails(t *testing.T) {
	never, err := FreeAddr() // nothing listens here
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		spec  Spec
		max   time.Duration // Start must fail within this
		is    []error
		wants []string
		code  int    // the *StartError's exit code; -2: no *StartError (nothing was started)
		tail  string // in its stderr tail
		cause StartCause
	}{
		{"exits at once", Spec{Argv: []string{"false"}}, time.Second,
			[]error{ErrExited}, []string{"start false:", "exit status 1"}, 1, "", StartExited},
		{"exits with stderr", Spec{Argv: []string{"sh", "-c", "echo boom >&2; exit 3"}}, time.Second,
			[]error{ErrExited}, []string{"start sh:", "exit status 3", "boom"}, 3, "boom", StartExited},
		{"never listens", Spec{Argv: []string{"sleep", "60"}, Addr: never, Ready: 300 * time.Millisecond}, 1500 * time.Millisecond,
			[]error{ErrNotReady, context.DeadlineExceeded}, []string{"start sleep:", never, "300ms"}, -1, "", StartNoListener},
		// The launcher cannot exec it: it exits 127, as a shell does.
		{"not found", Spec{Argv: []string{"/nonexistent/target"}}, time.Second,
			[]error{ErrExited}, []string{"start /nonexistent/target:", "exit status 127"}, launcherFailed, "/nonexistent/target", StartMissing},
		{"not found by the shell", Spec{Argv: []string{"sh", "-c", "/nonexistent/target"}}, time.Second,
			[]error{ErrExited}, []string{"start sh:", "exit status 127"}, 127, "not found", StartMissing},
		{"empty argv", Spec{}, time.Second, nil, []string{"empty Argv"}, -2, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			t0 := time.Now()
			p, err := Start(context.Background(), tc.spec)
			el := time.Since(t0)
			if err == nil {
				p.Stop()
				t.Fatal("Start succeeded")
			}
			t.Logf("after %v: %v", el, err)
			if el > tc.max {
				t.Errorf("Start failed after %v, want within %v", el, tc.max)
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("error does not wrap %v", target)
				}
			}
			for _, s := range tc.wants {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q", s)
				}
			}
			var se *StartError
			switch {
			case !errors.As(err, &se):
				if tc.code != -2 {
					t.Errorf("error is no *StartError")
				}
			case tc.code == -2:
				t.Errorf("a *StartError though nothing was started: %+v", se)
			case se.Exit.Code != tc.code || !strings.Contains(se.Exit.StderrTail, tc.tail) || len(se.Addrs) == 0:
				t.Errorf("StartError exit %d, stderr tail %q, addrs %v; want exit %d, a tail with %q, the addresses",
					se.Exit.Code, se.Exit.StderrTail, se.Addrs, tc.code, tc.tail)
			case se.Cause() != tc.cause:
				t.Errorf("StartError cause %q, want %q", se.Cause(), tc.cause)
			}
		})
	}
}

// Cancelling ctx ends the wait at once, and the process with it.
func TestStartCancelled(t *testing.T) {
	noLeaks(t)
	never, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = Start(ctx, Spec{Argv: []string{"sleep", "60"}, Addr: never})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotReady) {
		t.Errorf("err %v, want the context's deadline, not ErrNotReady", err)
	}
	if el := time.Since(t0); el > time.Second {
		t.Errorf("Start returned after %v", el)
	}
}

// Output past the caps: stdout keeps the first MaxStdout bytes and says it
// dropped the rest; stderr keeps the first and the last StderrTailSize.
func TestOutputCaps(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := mustStart(t, Spec{
		Argv: []string{"sh", "-c", `head -c 17000000 /dev/zero; seq 1 5000 >&2`},
		Addr: ln.Addr().String(),
	})
	<-p.Done()
	e := mustStop(t, p)
	if len(e.Stdout) != MaxStdout || !e.StdoutTruncated {
		t.Errorf("stdout %d bytes, truncated %v; want %d, true", len(e.Stdout), e.StdoutTruncated, MaxStdout)
	}
	if !strings.HasPrefix(e.StderrHead, "1\n2\n3\n") || len(e.StderrHead) != StderrTailSize {
		t.Errorf("stderr head %d bytes starting %q", len(e.StderrHead), e.StderrHead[:min(len(e.StderrHead), 20)])
	}
	if len(e.StderrTail) != StderrTailSize || !strings.HasSuffix(e.StderrTail, "\n4999\n5000\n") {
		t.Errorf("stderr tail %d bytes ending %q", len(e.StderrTail), e.StderrTail[max(0, len(e.StderrTail)-20):])
	}
}
