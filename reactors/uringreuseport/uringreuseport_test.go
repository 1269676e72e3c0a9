//go:build linux

package uringreuseport_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/reactors/uringreuseport"
)

// TestEndToEnd serves 16 connections on 4 loops, each with its own ring
// and listener, with callbacks offloaded to a pool (each result comes
// back through its loop's ingress, which that loop's ring polls): every
// frame echoed, the ledger balanced, nothing leaked; the kernel's flow
// hash spread the connections over more than one loop, and every loop
// served through its own ring (its completions and enters counted on
// it). The inline path is the reactors package's per-design tests'.
//
// Not with -short: its ring is uring's and its listeners reuseport's,
// which -short runs end to end; the reactors package's per-design tests
// serve this design there.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: uring's ring and reuseport's listeners run end to end in their packages, and this design in the reactors package's per-design tests")
	}
	if err := reactors.ProbeCompletion(); err != nil {
		t.Skip(err)
	}
	cfg := reactors.DefaultConfig()
	cfg.Loops, cfg.Workers = 4, 2
	st := reactortest.EndToEnd(t, uringreuseport.New, cfg)
	used := 0
	var accepts uint64
	for _, s := range st.PerLoop {
		if s.Role != reactors.RoleLoop {
			t.Errorf("loop %d: role %s, want loop", s.Loop, s.Role)
		}
		if s.RingEnters == 0 || s.Completions == 0 {
			t.Errorf("loop %d served without a ring of its own: %d enters, %d completions", s.Loop, s.RingEnters, s.Completions)
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
	if st.Counters.TasksOffloaded == 0 {
		t.Errorf("nothing went through the pool: %+v", st.Counters)
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*reactors.Config)
		want string
	}{
		{func(c *reactors.Config) { c.Assign = "least-conns" }, "assign"},
		{func(c *reactors.Config) { c.Exclusive = "off" }, "exclusive = off"},
		{func(c *reactors.Config) { c.Urgent = reactors.UrgentOOB }, "urgent = oob"},
	} {
		cfg := reactors.DefaultConfig()
		tc.mod(&cfg)
		_, err := uringreuseport.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, reactors.ErrConfig) {
			t.Errorf("New: %v, want a configuration error naming %q", err, tc.want)
		}
	}
}
