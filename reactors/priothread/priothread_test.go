//go:build linux

package priothread_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/priothread"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, priothread.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}

// TestControlDoesNotWaitForADataCallback sends one DATA frame whose
// callback takes 400 ms, then a PING on the control address: the control
// loop, on its own thread, must answer the PING before the data loop has
// finished the callback and echoed the DATA. The check is the order of the
// two answers, not a duration. A one-loop design fails it (prio did, when
// run in its place: the PING waited for the callback).
func TestControlDoesNotWaitForADataCallback(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Callback = "400ms"
	r := reactortest.Start(t, reactors.PrioThread, cfg)
	if tids := r.LoopThreads(); len(tids) != 2 || tids[0] == tids[1] {
		t.Fatalf("loop threads %v: want a data and a control thread", tids)
	}
	data, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	ctl, err := reactortest.Dial(r.ControlAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if err := data.Send(wire.KindData, 1, 1, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	echoed := make(chan time.Time, 1)
	go func() {
		if _, _, err := data.Recv(10 * time.Second); err == nil {
			echoed <- time.Now()
		}
		close(echoed)
	}()
	time.Sleep(20 * time.Millisecond) // let the data loop take the frame first (the claim holds either way)
	if err := ctl.Send(wire.KindPing, 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ctl.Recv(10 * time.Second); err != nil {
		t.Fatalf("PING on the control address: %v", err)
	}
	select {
	case at, ok := <-echoed:
		if ok {
			t.Fatalf("the DATA echo (at %v) came before the PING answer: control waited for the data callback", at.Format(time.StampMicro))
		}
		t.Fatal("the DATA frame was never echoed")
	default:
	}
	if _, ok := <-echoed; !ok {
		t.Fatal("the DATA frame was never echoed")
	}
}

// TestRefusesNoControlAddress: the control loop needs one.
func TestRefusesNoControlAddress(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.ControlListen = ""
	_, err := priothread.New(cfg)
	if !errors.Is(err, reactors.ErrConfig) || !strings.Contains(err.Error(), "control-listen") {
		t.Fatalf("prio-thread without a control address: %v, want a configuration error naming control-listen", err)
	}
}
