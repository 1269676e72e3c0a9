//go:build linux

package proc

import (
	"strings"
	"testing"
	"time"
)

// ControlAddr: "{control}" in the arguments and REACTORLAB_CONTROL_LISTEN
// carry it, and Start waits for it to accept (here 300 ms after the data
// address, from a second echo in the same group; the variable is cleared
// for the echoes, which would serve it themselves).
func TestControlAddr(t *testing.T) {
	noLeaks(t)
	// Two free ports picked one after the other may be the same one.
	ctl, addr := "", ""
	for ctl == addr {
		var err error
		if ctl, err = FreeAddr(); err == nil {
			addr, err = FreeAddr()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	p := mustStart(t, Spec{
		Addr:        addr,
		Argv:        []string{"sh", "-c", `echo "arg=$1 env=$REACTORLAB_CONTROL_LISTEN"; export REACTORLAB_CONTROL_LISTEN=; (sleep 0.3; exec "$0" --listen "$1") & exec "$0"`, echoBin, "{control}"},
		ControlAddr: ctl,
	})
	if el := time.Since(t0); el < 300*time.Millisecond {
		t.Errorf("Start returned after %v, before the control address listened", el)
	}
	roundTrip(t, dial(t, ctl), "control")
	e := mustStop(t, p)
	if want := "arg=" + ctl + " env=" + ctl + "\n"; string(e.Stdout) != want {
		t.Errorf("stdout %q, want %q", e.Stdout, want)
	}
	if _, err := Start(t.Context(), Spec{Argv: []string{"true"}, NoListen: true, ControlAddr: ctl}); err == nil || !strings.Contains(err.Error(), ErrNoListenAddr.Error()) {
		t.Errorf("NoListen with a ControlAddr: %v", err)
	}
}

// Terminate signals at once and returns; the exit that answers it is not
// an exit before the stop, and Stop sends no second SIGTERM.
func TestTerminate(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{Argv: []string{echoBin}, Grace: 5 * time.Second})
	if err := p.Terminate(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no exit within 5 s of Terminate")
	}
	e := mustStop(t, p)
	if e.Code != 0 || e.Killed || e.ExitedBeforeStop || len(e.Departed) != 0 {
		t.Errorf("exit %+v (exited before stop %v, departed %v), want code 0 in answer to Terminate", e, e.ExitedBeforeStop, e.Departed)
	}
}

// A target that ignores the SIGTERM of Terminate is killed by Stop once
// Grace has passed since Terminate, not Grace after Stop.
func TestTerminateThenStopKills(t *testing.T) {
	noLeaks(t)
	p := mustStart(t, Spec{
		Argv:     []string{"sh", "-c", `trap "" TERM; echo trapped >&2; sleep 60`},
		NoListen: true,
		Grace:    400 * time.Millisecond,
	})
	awaitTrapped(t, p)
	if err := p.Terminate(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	e := mustStop(t, p)
	if el := time.Since(t0); el > 300*time.Millisecond {
		t.Errorf("Stop took %v after 300 ms of a 400 ms grace", el)
	}
	if !e.Killed {
		t.Errorf("exit %+v, want killed", e)
	}
}

// awaitTrapped waits until p, a shell that traps SIGTERM, says "trapped"
// on stderr (5 s at most).
func awaitTrapped(t *testing.T, p *Process) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.StderrTail(), "trapped"); {
		if time.Now().After(deadline) {
			t.Fatal("sh never set its trap")
		}
		time.Sleep(time.Millisecond)
	}
}
