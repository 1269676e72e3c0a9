//go:build linux

package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	procs, err := Processes()
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, p := range procs {
		if p.PPid == os.Getpid() {
			kids = append(kids, fmt.Sprintf("%d(%s) %s", p.Pid, p.Comm, p.State))
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
