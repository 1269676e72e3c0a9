//go:build linux

package lab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/target"
)

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
			spec.Timeout = MinTimeout(spec.Grace)
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
// it may (it obeys a STOP) and its status is 0. The server exits 10 ms
// after it starts, while the client holds the run 300 ms (100 ms with
// -short, still ten times that).
func TestServerExitsByItself(t *testing.T) {
	noGoroutineLeak(t)
	hold := "300ms"
	if testing.Short() {
		hold = "100ms"
	}
	for _, c := range []struct {
		mayExit bool
		code    string
		valid   bool
	}{{false, "0", false}, {true, "0", true}, {true, "4", false}} {
		spec := echoSpec(ModeLoopback, Unpinned)
		spec.Server.Argv = []string{"@test-echo", "--exit-after", "10ms", "--exit-code", c.code}
		spec.Client.Argv = []string{"@test-client", "--hold", hold, "{addr}"}
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
		var sf *target.StartError
		if !errors.As(err, &sf) || sf.Cause != target.StartNoListener || !strings.Contains(err.Error(), "@test-echo --no-listen") ||
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
