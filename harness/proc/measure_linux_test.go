//go:build linux

package proc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

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

	// CPU: echo 64 MiB at a time until the tick clock has moved (64 MiB
	// costs some 20 ms, which per-thread 10 ms ticks may not show yet), at
	// most 1 GiB; both clocks see it and agree.
	c := conns[0]
	c.SetDeadline(time.Now().Add(60 * time.Second))
	var u2 Usage
	var tc int64
	for round := 1; ; round++ {
		echoed := make(chan error, 1)
		go func() {
			buf := make([]byte, 64<<10)
			for range 1024 {
				if _, err := c.Write(buf); err != nil {
					echoed <- err
					return
				}
			}
			echoed <- nil
		}()
		if _, err := io.CopyN(io.Discard, c, 64<<20); err != nil {
			t.Fatal(err)
		}
		if err := <-echoed; err != nil {
			t.Fatal(err)
		}
		if u2, err = p.Usage(); err != nil {
			t.Fatal(err)
		}
		if tc, err = p.ThreadCPU(); err != nil {
			t.Fatal(err)
		}
		if u2.CPUNs() > u0.CPUNs() || round == 16 {
			t.Logf("after %d MiB: %+v, stat CPU %v, schedstat CPU %v",
				64*round, u2, time.Duration(u2.CPUNs()), time.Duration(tc))
			break
		}
	}
	if u2.CPUNs() <= u0.CPUNs() || tc <= 0 {
		t.Errorf("CPU did not move: stat %d → %d ns, schedstat %d ns", u0.CPUNs(), u2.CPUNs(), tc)
	}
	// Ticks lag the exact clock by < 10 ms per thread and dead threads
	// count only in stat; allow 30 ms and 25%.
	if d := abs(u2.CPUNs() - tc); d > 30e6 && d > tc/4 {
		t.Errorf("stat CPU %d ns and schedstat CPU %d ns disagree", u2.CPUNs(), tc)
	}

	for _, c := range conns {
		c.Close() // else the echo, stopping, waits 3 s for its clients' EOF
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
		if ta.CPUList != own[0].CPUList {
			t.Errorf("thread %d on %q, this process's main thread on %q", ta.Tid, ta.CPUList, own[0].CPUList)
		}
	}
	mustStop(t, p)
	if _, err := p.Affinity(); !errors.Is(err, ErrExited) {
		t.Errorf("Affinity after Stop: %v, want ErrExited", err)
	}
}
