//go:build linux

package uringmainsub_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/reactors/uringmainsub"
)

// TestEndToEnd serves 16 connections on 3 sub-loops, with callbacks
// offloaded to a pool: every frame echoed, the ledger balanced, nothing
// leaked; every data connection was accepted on the acceptor's ring and
// handed over, and each sub-loop served the connections it adopted
// through its own ring (their receives armed there: its completions
// outnumber its adoptions), their results coming back through its ingress.
// The inline path is the reactors package's per-design tests'.
func TestEndToEnd(t *testing.T) {
	if err := reactors.ProbeCompletion(); err != nil {
		t.Skip(err)
	}
	cfg := reactors.DefaultConfig()
	cfg.Loops, cfg.Workers = 3, 2
	st := reactortest.EndToEnd(t, uringmainsub.New, cfg)
	if len(st.PerLoop) != 4 {
		t.Fatalf("%d loops in PerLoop, want the acceptor and 3 sub-loops", len(st.PerLoop))
	}
	acc := st.PerLoop[0]
	if acc.Role != reactors.RoleAcceptor || acc.Handoffs != 16 {
		t.Errorf("loop 0: role %s, %d handoffs; want the acceptor, 16", acc.Role, acc.Handoffs)
	}
	if acc.RingEnters == 0 || acc.Completions == 0 {
		t.Errorf("the acceptor accepted without its ring: %d enters, %d completions", acc.RingEnters, acc.Completions)
	}
	var in uint64
	for _, s := range st.PerLoop[1:] {
		if s.Role != reactors.RoleSubLoop {
			t.Errorf("loop %d: role %s, want sub-loop", s.Loop, s.Role)
		}
		if s.HandoffsIn > 0 && s.Completions <= s.HandoffsIn {
			t.Errorf("loop %d adopted %d connections but reaped %d completions: their receives were not on its ring", s.Loop, s.HandoffsIn, s.Completions)
		}
		in += s.HandoffsIn
	}
	if in != 16 {
		t.Errorf("sub-loops adopted %d handed-over connections, want 16", in)
	}
	if h := st.Histograms[reactors.HistHandoffFirstRead]; h.Count != 16 {
		t.Errorf("%s holds %d values, want 16 (a first read on each adopted connection)", reactors.HistHandoffFirstRead, h.Count)
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*reactors.Config)
		want string
	}{
		{func(c *reactors.Config) { c.Loops = 256 }, "loops = 256"},
		{func(c *reactors.Config) { c.Exclusive = "off" }, "exclusive = off"},
		{func(c *reactors.Config) { c.Urgent = reactors.UrgentOOB }, "urgent = oob"},
	} {
		cfg := reactors.DefaultConfig()
		tc.mod(&cfg)
		_, err := uringmainsub.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, reactors.ErrConfig) {
			t.Errorf("New: %v, want a configuration error naming %q", err, tc.want)
		}
	}
}
