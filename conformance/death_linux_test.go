//go:build linux

package conformance_test

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/internal/testbin"
)

// A server that dies during a case fails it with cause target, though the
// case's own checks found nothing wrong: behind a wrapper shell (whose own
// end, after the SIGTERM that stops it, would read as clean) and as the
// direct child alike.
func TestTargetDeathFailsTheCase(t *testing.T) {
	t.Parallel() // its target is a process of its own; see TestMain
	echo := testbin.Path(t, "examples/echo")
	killServer := conformance.Case{ID: "Z1", Title: "kills the server, then finds nothing wrong", Run: func(c *conformance.C) {
		g, ok := c.Instance().(interface{ Group() ([]int, error) })
		if !ok {
			c.Fatalf("no process group")
		}
		pids, err := g.Group()
		if err != nil || len(pids) == 0 {
			c.Fatalf("group: %v %v", pids, err)
		}
		victim := pids[len(pids)-1] // the server: the leader's child, or the leader
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			c.Fatalf("kill: %v", err)
		}
		// The case ends once the server is dead (a zombie, or reaped): on
		// a loaded machine a SIGKILLed process takes its time to exit, and
		// one still dying when the stop comes would answer the stop.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if st, err := procfs.ReadStat(victim); err != nil || st.Zombie() {
				break
			}
			if time.Now().After(deadline) {
				c.Fatalf("pid %d still alive 10 s after SIGKILL", victim)
			}
		}
	}}
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"behind a shell", []string{"/bin/sh", "-c", echo + " --listen {addr}; sleep 60"}},
		{"direct child", []string{echo, "--listen", "{addr}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := conformance.RunCase(context.Background(), conformance.Command{Argv: tc.argv}, killServer, 20*time.Second)
			t.Logf("%s (%s): %s", r.Verdict, r.Cause, r.Reason)
			if r.Verdict != conformance.Fail || r.Cause != conformance.CauseTarget || !strings.Contains(r.Reason, "during the case") {
				t.Errorf("a server killed during the case: %s (%s) %q, want a failure with cause target saying it died during the case", r.Verdict, r.Cause, r.Reason)
			}
		})
	}
}

// A server that forks a child per connection, each exiting when its
// connection ends (the readiness probe's child included), is not a target
// that died: only the processes there before it was found ready are
// watched.
func TestForkingServerIsNotDead(t *testing.T) {
	t.Parallel() // its target is a process of its own; see TestMain
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 (socketserver.ForkingTCPServer)")
	}
	script, err := filepath.Abs("testdata/forking.py")
	if err != nil {
		t.Fatal(err)
	}
	churn := conformance.Case{ID: "Z2", Title: "connections come and go", Run: func(c *conformance.C) {
		for i := 0; i < 10; i++ {
			conn, err := net.DialTimeout("tcp", c.Instance().Addr(), 5*time.Second)
			if err != nil {
				c.Fatalf("dial: %v", err)
			}
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Write([]byte("ping")); err != nil {
				c.Fatalf("write: %v", err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(conn, buf); err != nil {
				c.Fatalf("read: %v", err)
			}
			conn.Close()
		}
		time.Sleep(200 * time.Millisecond) // the children exit
	}}
	for i := 0; i < 5; i++ {
		r := conformance.RunCase(context.Background(), conformance.Command{Argv: []string{"python3", script}}, churn, 30*time.Second)
		if r.Verdict != conformance.Pass {
			t.Fatalf("run %d: a forking server whose children come and go: %s (%s) %s", i, r.Verdict, r.Cause, r.Reason)
		}
	}
}
