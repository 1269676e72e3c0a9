//go:build linux

package proc

import (
	"errors"
	"testing"
	"time"
)

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

// A target that ignores SIGTERM is killed after Grace. It serves nothing
// (NoListen), so Start returns once it runs.
func TestStopKillsAfterGrace(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{
		Argv:     []string{"sh", "-c", `trap "" TERM; echo trapped >&2; sleep 60; echo done`},
		NoListen: true,
		Grace:    200 * time.Millisecond,
	})
	awaitTrapped(t, p)
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
