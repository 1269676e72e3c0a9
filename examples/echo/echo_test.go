//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
)

var bin string // this command, built by TestMain

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "echo-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "echo")
	// `go test` puts its own GOROOT/bin first in PATH.
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build echo: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

func start(t *testing.T, args ...string) *proc.Process {
	t.Helper()
	p, err := proc.Start(context.Background(), proc.Spec{Argv: append([]string{bin, "--lifetime", "1m"}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if e, err := p.Stop(); err != nil || e.Code != 0 {
			t.Errorf("stop: %v, %v; stderr:\n%s", e, err, e.StderrTail)
		}
	})
	return p
}

func dial(t *testing.T, p *proc.Process) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func roundTrip(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
		t.Fatal(err)
	}
}

// Each symptom is what a conformance case would see of one bug. It reports
// whether p shows it, and what it measured.
type symptom func(t *testing.T, p *proc.Process) (bool, string)

// burnsIdle: CPU over 300 ms with one idle connection.
func burnsIdle(t *testing.T, p *proc.Process) (bool, string) {
	c := dial(t, p)
	roundTrip(t, c, make([]byte, 64))
	cpu := func() int64 {
		ns, err := p.ThreadCPU()
		if errors.Is(err, proc.ErrNoSchedstat) {
			var u proc.Usage
			u, err = p.Usage()
			ns = u.CPUNs()
		}
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	c0 := cpu()
	time.Sleep(300 * time.Millisecond)
	used := time.Duration(cpu() - c0)
	return used > 30*time.Millisecond, fmt.Sprintf("%v CPU in 300ms idle", used)
}

// growsUnderSlowConsumer: peak RSS while a client sends up to 64 MiB and
// reads nothing back. It sends 1 MiB at a time while the server takes it; a
// server with backpressure stops taking bytes once the socket buffers are
// full.
func growsUnderSlowConsumer(t *testing.T, p *proc.Process) (bool, string) {
	u0, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	var sent int64
	for sent < 64<<20 {
		c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := io.CopyN(c, zeros{}, 1<<20)
		sent += n
		if err != nil {
			break
		}
	}
	u1, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	grew := u1.PeakRSS - u0.PeakRSS
	return grew > 32<<20, fmt.Sprintf("sent %d MiB unread, peak RSS grew %d MiB", sent>>20, grew>>20)
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// leaksFds: open fds after 10 clients closed.
func leaksFds(t *testing.T, p *proc.Process) (bool, string) {
	const n = 10
	fds := func() int {
		u, err := p.Usage()
		if err != nil {
			t.Fatal(err)
		}
		return u.Fds
	}
	var cs []net.Conn
	for range n {
		c := dial(t, p)
		roundTrip(t, c, []byte("x"))
		cs = append(cs, c)
	}
	open := fds()
	for _, c := range cs {
		c.Close()
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for fds() > open-n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	after := fds()
	return after > open-n, fmt.Sprintf("%d fds with %d clients, %d after they closed", open, n, after)
}

// losesFragments: a 32-byte header sent in two 16-byte halves 50 ms apart.
func losesFragments(t *testing.T, p *proc.Process) (bool, string) {
	c := dial(t, p)
	c.Write(make([]byte, 16))
	time.Sleep(50 * time.Millisecond)
	c.Write(make([]byte, 16))
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	n, _ := io.ReadFull(c, make([]byte, 32))
	return n < 32, fmt.Sprintf("%d of 32 bytes echoed", n)
}

// TestExitOnEMFILE: at a descriptor limit of 32 with 48 connections
// dialled, the plain echo waits and keeps serving once connections close;
// with --bug exit-on-emfile it exits (code 1), as gnet v2.9.7 does.
func TestExitOnEMFILE(t *testing.T) {
	for _, bug := range []bool{false, true} {
		args := []string{bin, "--lifetime", "1m"}
		if bug {
			args = append(args, "--bug", "exit-on-emfile")
		}
		p, err := proc.Start(context.Background(), proc.Spec{Argv: args, FdLimit: 32})
		if err != nil {
			t.Fatal(err)
		}
		var conns []net.Conn
		for range 48 {
			c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		// The accept loop meets the limit within milliseconds of the dials.
		select {
		case <-p.Done():
		case <-time.After(2 * time.Second):
		}
		for _, c := range conns {
			c.Close()
		}
		exited := false
		select {
		case <-p.Done():
			exited = true
		default:
		}
		if !exited {
			// Recovery: with the connections closed, a new one is served.
			c := dial(t, p)
			roundTrip(t, c, []byte("after the limit"))
		}
		e, err := p.Stop()
		switch {
		case err != nil:
			t.Errorf("bug %v: stop: %v", bug, err)
		case bug && (!exited || e.Code != 1):
			t.Errorf("--bug exit-on-emfile: exited %v, code %d; want it gone with code 1", exited, e.Code)
		case !bug && (exited || e.Code != 0):
			t.Errorf("plain echo at its limit: exited %v, code %d; want it serving, then code 0\n%s", exited, e.Code, e.StderrTail)
		}
	}
}

// The plain echo shows no symptom; each bug shows its own.
func TestBugs(t *testing.T) {
	symptoms := map[string]symptom{
		"busy-idle":       burnsIdle,
		"no-backpressure": growsUnderSlowConsumer,
		"leak-on-close":   leaksFds,
		"drop-partial":    losesFragments,
		"exit-on-emfile":  nil, // TestExitOnEMFILE: it needs a descriptor limit
	}
	if len(symptoms) != len(bugs) {
		t.Fatalf("%d symptoms for %d bugs", len(symptoms), len(bugs))
	}
	for bug, shows := range symptoms {
		if shows == nil {
			continue
		}
		t.Run(bug, func(t *testing.T) {
			if got, what := shows(t, start(t)); got {
				t.Errorf("plain echo shows the symptom: %s", what)
			} else {
				t.Logf("plain: %s", what)
			}
			if got, what := shows(t, start(t, "--bug", bug)); !got {
				t.Errorf("--bug %s does not show its symptom: %s", bug, what)
			} else {
				t.Logf("--bug %s: %s", bug, what)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	out, err := exec.Command(bin, "--bug", "nope").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "accepted: busy-idle, drop-partial, exit-on-emfile, leak-on-close, no-backpressure") {
		t.Errorf("--bug nope: %v, %q; want exit 2 listing the bugs", err, out)
	}
	out, err = exec.Command(bin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "leak-on-close") {
		t.Errorf("--help: %v, %q", err, out)
	}

	// --listen wins over $REACTORLAB_LISTEN.
	a1, _ := proc.FreeAddr()
	a2, _ := proc.FreeAddr()
	cmd := exec.Command(bin, "--listen", a2, "--lifetime", "100ms")
	cmd.Env = append(os.Environ(), "REACTORLAB_LISTEN="+a1)
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "echo: listening on "+a2) {
		t.Errorf("--listen %s with env %s: %v, %q", a2, a1, err, out)
	}
}
