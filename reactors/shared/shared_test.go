//go:build linux

package shared_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/reactors/shared"
)

// TestEndToEnd serves 16 connections on 3 loops sharing one listener,
// exclusive on and off, inline and offloaded: every frame echoed, the
// ledger balanced, nothing leaked (the listener closed once, by the last
// loop to let go of it).
//
// With -short exclusive on (the default) runs offloaded and off inline:
// both registrations and both callback paths run (the default inline is
// what the reactors package's per-design tests run).
func TestEndToEnd(t *testing.T) {
	for _, excl := range []string{"on", "off"} {
		for _, workers := range []int{0, 2} {
			if testing.Short() && (excl == "on") != (workers == 2) {
				continue
			}
			cfg := reactors.DefaultConfig()
			cfg.Loops, cfg.Exclusive, cfg.Workers = 3, excl, workers
			st := reactortest.EndToEnd(t, shared.New, cfg)
			var accepts uint64
			for _, s := range st.PerLoop {
				accepts += s.Accepts
			}
			if accepts != 17 {
				t.Errorf("exclusive %s: %d accepts, want 17: %+v", excl, accepts, st.PerLoop)
			}
		}
	}
}

// TestExclusiveAvoidsTheHerd opens 100 connections 2 ms apart on 4 idle
// loops and counts the loop threads' wakeups (voluntary context
// switches): without EPOLLEXCLUSIVE each connection wakes every loop
// (measured 4.95 per connection; the kernel sends most losers back to
// sleep inside epoll_wait, so few reach accept), with it one loop (1.44,
// the extra from the scheduler's yields; the same loop each time: the
// kernel wakes the waiter that went to sleep last).
func TestExclusiveAvoidsTheHerd(t *testing.T) {
	const conns = 100
	wakeups := map[string]float64{}
	for _, excl := range []string{"on", "off"} {
		cfg := reactors.DefaultConfig()
		cfg.Loops, cfg.Exclusive = 4, excl
		r := reactortest.Start(t, reactors.SharedListener, cfg)
		for range conns {
			c, err := net.Dial("tcp", r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			time.Sleep(2 * time.Millisecond)
		}
		// Counters are published up to a millisecond late.
		reactortest.WaitFor(2*time.Second, func() bool { return r.Stats().Counters.Accepts == conns })
		st := r.Stats()
		if st.Counters.Accepts != conns {
			t.Fatalf("exclusive %s: %d accepts, want %d", excl, st.Counters.Accepts, conns)
		}
		var wake uint64
		for _, s := range st.PerLoop {
			wake += s.Wakeups
		}
		wakeups[excl] = float64(wake) / conns
		t.Logf("exclusive %s: %.2f loop wakeups per connection; per loop %+v", excl, wakeups[excl], st.PerLoop)
	}
	if wakeups["off"] < 2.5 || wakeups["off"] < 2*wakeups["on"] {
		t.Errorf("without EPOLLEXCLUSIVE: %.2f wakeups per connection on 4 loops (with it: %.2f), want about 4 and at least twice as many", wakeups["off"], wakeups["on"])
	}
}

func TestCheckRefuses(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Assign = "round-robin"
	if _, err := shared.New(cfg); err == nil || !strings.Contains(err.Error(), "assign") {
		t.Errorf("New: %v, want an error naming assign", err)
	}
}

// TestStopClosesTheSharedListener: once every loop has seen the stop, the
// last one to let go of the listener closes it, so a connect is refused
// while the reactor is still draining, not only after it exits.
func TestStopClosesTheSharedListener(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Loops = 3
	r := reactortest.Start(t, reactors.SharedListener, cfg)
	addr := r.Addr().String()
	if _, err := reactortest.StopFrame(r.ControlAddr().String(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Stats().PerLoop {
		if s.StopObservedNs < 0 {
			t.Fatalf("STOP_ACK came before loop %d saw the stop", s.Loop)
		}
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("connect to %s accepted after every loop saw the stop", addr)
	}
}
