//go:build linux

package proc

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/target"
)

// The listen happens 300 ms after the start: Start must wait for it, and
// the {addr} substitution must reach the flag.
func TestStartWaitsForPort(t *testing.T) {
	noLeaks(t)
	t0 := time.Now()
	p := mustStart(t, Spec{Argv: []string{"sh", "-c", `sleep 0.3; exec "$0" --listen {addr}`, echoBin}})
	if el := time.Since(t0); el < 300*time.Millisecond {
		t.Errorf("Start returned after %v, before the target could listen", el)
	}
	c := dial(t, p.Addr())
	roundTrip(t, c, "hello")
	c.Close() // else the echo, stopping, waits 3 s for this client's EOF
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
	c := dial(t, addr)
	roundTrip(t, c, "via env")
	c.Close() // else the echo, stopping, waits 3 s for this client's EOF
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
		cause target.StartCause
	}{
		{"exits at once", Spec{Argv: []string{"false"}}, time.Second,
			[]error{ErrExited}, []string{"start false:", "exit status 1"}, 1, "", target.StartExited},
		{"exits with stderr", Spec{Argv: []string{"sh", "-c", "echo boom >&2; exit 3"}}, time.Second,
			[]error{ErrExited}, []string{"start sh:", "exit status 3", "boom"}, 3, "boom", target.StartExited},
		{"never listens", Spec{Argv: []string{"sleep", "60"}, Addr: never, Ready: 300 * time.Millisecond}, 1500 * time.Millisecond,
			[]error{ErrNotReady, context.DeadlineExceeded}, []string{"start sleep:", never, "300ms"}, -1, "", target.StartNoListener},
		// The launcher cannot exec it: it exits 127, as a shell does.
		{"not found", Spec{Argv: []string{"/nonexistent/target"}}, time.Second,
			[]error{ErrExited}, []string{"start /nonexistent/target:", "exit status 127"}, launcherFailed, "/nonexistent/target", target.StartMissing},
		{"not found by the shell", Spec{Argv: []string{"sh", "-c", "/nonexistent/target"}}, time.Second,
			[]error{ErrExited}, []string{"start sh:", "exit status 127"}, 127, "not found", target.StartMissing},
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
	p := mustStart(t, Spec{
		Argv:     []string{"sh", "-c", `head -c 17000000 /dev/zero; seq 1 5000 >&2`},
		NoListen: true,
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

// An address another process already listens on is not the target's
// readiness, though a dial to it is accepted: Start refuses it at once
// with ErrAddrTaken (cause target.StartAddrTaken), not after its bound as
// a target that never listens, and never returns a process "ready" on
// someone else's listener. Here the other process is this test, and the
// target never binds, so every accepted dial is the other's.
func TestStartRefusesAnAddressAnotherProcessHolds(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t0 := time.Now()
	p, err := Start(context.Background(), Spec{Argv: []string{"sleep", "30"}, Addr: ln.Addr().String(), Ready: 10 * time.Second})
	el := time.Since(t0)
	if err == nil {
		mustStop(t, p)
		t.Fatalf("started %v on an address this test holds", ln.Addr())
	}
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, ErrAddrTaken) || se.Cause() != target.StartAddrTaken {
		t.Fatalf("err %v, want a *StartError wrapping ErrAddrTaken", err)
	}
	if el > 5*time.Second {
		t.Errorf("refused after %v: not at once, but as a target that never listens", el)
	}
	f := se.StartFailure("cmd:echo", 10*time.Second)
	if msg := f.Error(); !strings.Contains(msg, "another process held "+ln.Addr().String()) {
		t.Errorf("the start failure reads %q; want it to say another process held the address", msg)
	}
}

// A target that listens, but on a port of its own and not on the address
// it was given ({addr}, REACTORLAB_LISTEN), is told so when the wait ends:
// the cause is target.StartElsewhere, not a listener that needs longer,
// the failure names the address it listens on and the one it was given,
// and shows the end of its stdout, where it said where it listens. The
// port is an ephemeral one this test picks, passed by the server's own
// flag.
func TestStartSaysWhereTheTargetListensInstead(t *testing.T) {
	noLeaks(t)
	own, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(own)
	given, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Spec{
		Argv:  []string{"sh", "-c", `echo "listening on $1"; exec "$0" --listen "127.0.0.1:$1"`, echoBin, port},
		Addr:  given,
		Ready: time.Second,
	})
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want a *StartError", err)
	}
	if se.Cause() != target.StartElsewhere || len(se.Listening) != 1 || se.Listening[0] != own {
		t.Fatalf("cause %q, listening %v; want %q, [%s]: %v", se.Cause(), se.Listening, target.StartElsewhere, own, err)
	}
	f := se.StartFailure("cmd:server", time.Second)
	msg := f.Error()
	for _, want := range []string{
		"it listens on " + own + ", not on the address it was given (" + given + "): pass it " + AddrPlaceholder + " or read " + ListenEnv,
		"its stdout ends:\n    listening on " + port,
		"echo: listening on " + own, // its stderr
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the start failure lacks %q:\n%s", want, msg)
		}
	}
	if h := f.Hint("--start-timeout"); h != "" {
		t.Errorf("a target that listens elsewhere is told to wait longer: %q", h)
	}
}
