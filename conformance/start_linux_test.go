//go:build linux

package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

// A target that cannot start is refused once, with the cause and the end
// of its stderr, within the start timeout (+1 s), and leaves no process
// behind: a missing program (direct or behind a shell), one that exits at
// once (silent, or saying why), one that never listens, and reference
// targets whose configuration their serve refuses or whose reactor does.
func TestCheckStartRefuses(t *testing.T) {
	t.Parallel() // its targets are processes of their own, or fail before a reactor runs; see TestMain
	sleep := sleepArg(1)
	bad := reactors.DefaultConfig()
	bad.Budgets.Input = 0 // serve and reactors.New refuse it
	const timeout = time.Second
	for _, tc := range []struct {
		name   string
		target conformance.Target
		cause  target.StartCause
		wants  []string // in the error's text
	}{
		{"missing", conformance.Command{Argv: []string{"/nonexistent/server"}}, target.StartMissing,
			[]string{"could not be run", "exit status 127", "/nonexistent/server"}},
		{"missing behind a shell", conformance.Command{Argv: []string{"/bin/sh", "-c", "exec /nonexistent/server"}, Label: "/nonexistent/server"},
			target.StartMissing, []string{"cmd:/nonexistent/server:", "exit status 127", "not found"}},
		{"exits at once", conformance.Command{Argv: []string{"true"}}, target.StartExited,
			[]string{"exited (exit status 0) before it listened on 127.0.0.1:", "wrote nothing on stderr"}},
		{"exits saying why", conformance.Command{Argv: []string{"/bin/sh", "-c", "echo boom >&2; exit 3"}}, target.StartExited,
			[]string{"exit status 3", "its stderr ends:\n    boom"}},
		{"never listens", conformance.Command{Argv: []string{"sleep", sleep}}, target.StartNoListener,
			[]string{"nothing accepted connections on 127.0.0.1:", "within 1s", "killed"}},
		{"reference, bad configuration", conformance.Process{Design: reactors.LT, Config: &bad, Command: []string{testbin.Path(t, "cmd/reactorlab")}},
			target.StartExited, []string{"process:lt:", "exit status 2", "budget-input"}},
		{"in-process, bad configuration", conformance.InProcess{Design: reactors.LT, Config: &bad}, target.StartFailed,
			[]string{"lt: did not start", "budget"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			err := conformance.CheckStart(context.Background(), tc.target, timeout)
			el := time.Since(t0)
			t.Logf("after %v: %v", el, err)
			var se *target.StartError
			if !errors.As(err, &se) {
				t.Fatalf("%v: want a *StartError", err)
			}
			if se.Cause != tc.cause {
				t.Errorf("cause %q, want %q", se.Cause, tc.cause)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q", w)
				}
			}
			if el > timeout+time.Second {
				t.Errorf("refused after %v, start timeout %v", el, timeout)
			}
			if pids := processesWithArgs("sleep", sleep); len(pids) > 0 {
				t.Errorf("the target's process is still there: %v", pids)
			}
		})
	}
}

// counting counts the starts of a target.
type counting struct {
	conformance.Target
	starts atomic.Int32
}

func (c *counting) Start(ctx context.Context, s conformance.Setup) (conformance.Instance, error) {
	c.starts.Add(1)
	return c.Target.Start(ctx, s)
}

// RunAll starts a target that cannot start once, and runs no case: one
// error, not one failure per case.
func TestRunAllRefusesOnce(t *testing.T) {
	counted := &counting{Target: conformance.Command{Argv: []string{"true"}}}
	results, err := conformance.RunAll(context.Background(), counted, selected(t, "F", "R"), conformance.Options{})
	var se *target.StartError
	if !errors.As(err, &se) || se.Cause != target.StartExited || len(results) != 0 || counted.starts.Load() != 1 {
		t.Fatalf("results %v, err %v, %d starts; want no result, a StartError (exited), one start", results, err, counted.starts.Load())
	}
}

// hanging is a black box that accepts connections in this process and
// never reads or answers them: a target that starts well and then stalls.
type hanging struct{}

func (hanging) Name() string { return "hanging" }

func (hanging) Start(ctx context.Context, _ conformance.Setup) (conformance.Instance, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hangingInstance{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	return h, nil
}

type hangingInstance struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (h *hangingInstance) Addr() string                      { return h.ln.Addr().String() }
func (h *hangingInstance) ControlAddr() string               { return "" }
func (h *hangingInstance) Reference() *conformance.Reference { return nil }
func (h *hangingInstance) Stats() (reactors.Stats, error) {
	return reactors.Stats{}, conformance.ErrUnsupported
}
func (h *hangingInstance) Usage() (conformance.Usage, error) {
	return conformance.Usage{RunqWait: -1, RSS: -1, Fds: -1}, nil
}
func (h *hangingInstance) Stop() (conformance.Final, error) {
	h.ln.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
	h.conns = nil
	return conformance.Final{Clean: true}, nil
}

// A case's timeout bounds it, from the start of its instance: a target
// that never listens and one that stalls after a good start both fail the
// case with cause timeout within it (+1 s).
func TestCaseTimeoutBounds(t *testing.T) {
	t.Parallel() // its targets are a child process and a listener that runs no reactor; see TestMain
	sleep := sleepArg(2)
	f1, _ := cases.Lookup("F1")
	const timeout = time.Second
	for _, tc := range []struct {
		name   string
		target conformance.Target
	}{
		{"never listens", conformance.Command{Argv: []string{"sleep", sleep}}},
		{"stalls", hanging{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			r := conformance.RunCase(context.Background(), tc.target, f1, timeout)
			el := time.Since(t0)
			t.Logf("after %v: %s (%s) %s", el, r.Verdict, r.Cause, r.Reason)
			if r.Verdict != conformance.Fail || r.Cause != conformance.CauseTimeout || !strings.Contains(r.Reason, "within 1s") {
				t.Errorf("%s (%s) %q, want a failure with cause timeout naming the bound", r.Verdict, r.Cause, r.Reason)
			}
			if el > timeout+time.Second {
				t.Errorf("the case took %v, bound %v", el, timeout)
			}
			if pids := processesWithArgs("sleep", sleep); len(pids) > 0 {
				t.Errorf("the target's process is still there: %v", pids)
			}
		})
	}
}

// A cancelled run judges nothing it had not finished: the case running
// is interrupted (not failed, though it saw its context end and said so),
// and the cases after it are not run.
func TestInterruptedRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seesTheEnd := conformance.Case{ID: "Z3", Title: "sees its context end", Run: func(c *conformance.C) {
		cancel()
		<-c.Context().Done()
		c.Errorf("the context ended: %v", c.Context().Err())
	}}
	r := conformance.RunCase(ctx, hanging{}, seesTheEnd, 10*time.Second)
	if r.Verdict != conformance.Interrupted || r.Cause != "" || !strings.Contains(r.Reason, "interrupted") {
		t.Errorf("a case whose run was cancelled: %s (%s) %q, want interrupted", r.Verdict, r.Cause, r.Reason)
	}
	if r := conformance.RunCase(ctx, hanging{}, seesTheEnd, 10*time.Second); r.Verdict != conformance.NotRun {
		t.Errorf("a case started after the cancel: %s, want not-run", r.Verdict)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	results, err := conformance.RunAll(ctx, conformance.InProcess{Design: reactors.LT}, selected(t, "F1", "F2", "F3"), conformance.Options{
		Progress: func(conformance.Result) { cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []string
	for _, r := range results {
		verdicts = append(verdicts, r.ID+" "+string(r.Verdict))
	}
	if got := strings.Join(verdicts, ", "); got != "F1 pass, F2 not-run, F3 not-run" {
		t.Errorf("cancelled after the first case: %s", got)
	}
	if s := conformance.Summarize(results); !s.WasInterrupted() || s.NotRun != 2 || s.Fail != 0 {
		t.Errorf("summary %+v", s)
	}
}

// sleepArg is an argument of sleep(1) unique to this process (another go
// test of this package may be running) and to the test that passes n (the
// tests that use it run side by side), so processesWithArgs finds only
// that test's.
func sleepArg(n int) string { return fmt.Sprintf("1000.%d%d", os.Getpid(), n) }

// processesWithArgs lists the pids whose command line is exactly argv.
func processesWithArgs(argv ...string) []string {
	want := strings.Join(argv, "\x00") + "\x00"
	var pids []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && string(b) == want {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// selected is the catalogue's cases named by ids (case ids or group
// letters), or fails t.
func selected(t *testing.T, ids ...string) []conformance.Case {
	t.Helper()
	cs, err := cases.Select(ids)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
