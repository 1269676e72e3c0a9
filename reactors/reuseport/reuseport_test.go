//go:build linux

package reuseport_test

import (
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/reactors/reuseport"
)

// TestEndToEnd serves 16 connections on 4 loops, each with its own
// listener, with inline and offloaded callbacks: every frame echoed, the
// ledger balanced, nothing leaked; the kernel's flow hash spread the
// connections over more than one loop, and no accept turn was useless
// (no loop waits on another's listener).
//
// With -short only offloaded: the inline path with these listeners is
// what the reactors package's per-design tests run.
func TestEndToEnd(t *testing.T) {
	for _, workers := range []int{0, 2} {
		if testing.Short() && workers == 0 {
			continue
		}
		cfg := reactors.DefaultConfig()
		cfg.Loops, cfg.Workers = 4, workers
		st := reactortest.EndToEnd(t, reuseport.New, cfg)
		used := 0
		var accepts uint64
		for _, s := range st.PerLoop {
			if s.Role != reactors.RoleLoop {
				t.Errorf("loop %d: role %s, want loop", s.Loop, s.Role)
			}
			if s.Accepts > 0 {
				used++
			}
			accepts += s.Accepts
		}
		if accepts != 17 { // 16 data connections and the STOP's control connection
			t.Errorf("%d accepts, want 17: %+v", accepts, st.PerLoop)
		}
		if used < 2 {
			t.Errorf("every connection on one loop of 4: %+v", st.PerLoop)
		}
		if u := st.Counters.UselessAcceptWakeups; u > 0 {
			t.Logf("%d useless accept wakeups (a listener's wakeup that found its backlog empty)", u)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*reactors.Config)
		want string
	}{
		{func(c *reactors.Config) { c.Assign = "least-conns" }, "assign"},
		{func(c *reactors.Config) { c.Exclusive = "off" }, "exclusive = off"},
	} {
		cfg := reactors.DefaultConfig()
		tc.mod(&cfg)
		_, err := reuseport.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want an error naming %q", err, tc.want)
		}
	}
}
