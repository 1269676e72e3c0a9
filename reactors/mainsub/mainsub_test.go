//go:build linux

package mainsub_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/mainsub"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// TestEndToEnd serves 16 connections on 3 sub-loops under every
// assignment, with inline and offloaded callbacks: every frame echoed, the
// ledger balanced, nothing leaked, and every connection handed over by the
// acceptor and registered by a sub-loop, none by the acceptor.
//
// With -short each assignment runs once, offloaded and inline in turn
// (round-robin, the default, offloaded: the default inline is what the
// reactors package's per-design tests run): every assignment and both
// callback paths still run.
func TestEndToEnd(t *testing.T) {
	for i, assign := range reactors.AssignModes {
		for _, workers := range []int{0, 2} {
			t.Run(string(assign)+"/workers="+string(rune('0'+workers)), func(t *testing.T) {
				if testing.Short() && workers != 2*((i+1)%2) {
					t.Skip("-short: one callback path per assignment")
				}
				cfg := reactors.DefaultConfig()
				cfg.Loops, cfg.Assign, cfg.Workers = 3, string(assign), workers
				st := reactortest.EndToEnd(t, mainsub.New, cfg)
				checkHandedOver(t, st, 16)
			})
		}
	}
}

func checkHandedOver(t *testing.T, st reactors.Stats, data uint64) {
	t.Helper()
	if len(st.PerLoop) != 4 {
		t.Fatalf("%d loops in PerLoop, want the acceptor and 3 sub-loops", len(st.PerLoop))
	}
	acc := st.PerLoop[0]
	if acc.Role != reactors.RoleAcceptor || acc.Handoffs != data {
		t.Errorf("loop 0: role %s, %d handoffs; want the acceptor, %d", acc.Role, acc.Handoffs, data)
	}
	var in uint64
	for _, s := range st.PerLoop[1:] {
		if s.Role != reactors.RoleSubLoop {
			t.Errorf("loop %d: role %s, want sub-loop", s.Loop, s.Role)
		}
		in += s.HandoffsIn
	}
	if in != data {
		t.Errorf("sub-loops registered %d handed-over connections, want %d", in, data)
	}
	for _, name := range []string{reactors.HistHandoff, reactors.HistHandoffFirstRead} {
		if h := st.Histograms[name]; h.Count != data {
			t.Errorf("%s holds %d values, want %d", name, h.Count, data)
		}
	}
}

// TestRoundRobinDeals: 12 connections opened one after another land 4 on
// each of 3 sub-loops.
func TestRoundRobinDeals(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Loops = 3
	r := reactortest.Start(t, reactors.MainSub, cfg)
	for range 12 {
		c := reactortest.DialBurst(t, r, 1)
		if _, err := c.RecvCount(1, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	reactortest.WaitFor(2*time.Second, func() bool { // counters are published up to a millisecond late
		var n uint64
		for _, s := range r.Stats().PerLoop[1:] {
			n += s.Conns
		}
		return n == 12
	})
	st := r.Stats()
	for _, s := range st.PerLoop[1:] {
		if s.Conns != 4 {
			t.Errorf("sub-loop %d has %d connections, want 4 (round-robin over 3): %+v", s.Loop, s.Conns, st.PerLoop)
		}
	}
}

// TestFullIngressKeepsConnections: with sub-loop ingresses of 2 items, a
// storm of 200 connections finds them full (HandoffFull > 0) and every
// connection is still served; the mutant loses some.
func TestFullIngressKeepsConnections(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		cfg := reactors.DefaultConfig()
		cfg.Loops, cfg.IngressCap = 2, 2
		cfg.Faults.HandoffDropWhenFull = mutant
		r := reactortest.Start(t, reactors.MainSub, cfg)
		err := reactortest.Echo(r.Addr().String(), 200, []int{64}, 10*time.Second)
		st := r.Stats()
		if st.Counters.HandoffFull == 0 {
			t.Skipf("no push found a full ingress (%+v): the storm did not outrun the sub-loops", st.Counters)
		}
		switch {
		case !mutant && err != nil:
			t.Errorf("correct: %v (handoff full %d, backlog max %d)", err, st.Counters.HandoffFull, st.Counters.HandoffBacklogMax)
		case mutant && err == nil:
			t.Errorf("mutant: every connection served although %d pushes found a full ingress", st.Counters.HandoffFull)
		}
		t.Logf("mutant=%v: handoff full %d, backlog max %d, err %.80v", mutant, st.Counters.HandoffFull, st.Counters.HandoffBacklogMax, err)
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*reactors.Config)
		want string
	}{
		{func(c *reactors.Config) { c.Loops = 256 }, "loops = 256"},
		{func(c *reactors.Config) { c.Exclusive = "off" }, "exclusive = off"},
		{func(c *reactors.Config) { c.Assign = "fastest" }, "assign"},
	} {
		cfg := reactors.DefaultConfig()
		tc.mod(&cfg)
		_, err := mainsub.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want an error naming %q", err, tc.want)
		}
	}
}

// TestLeastLoadedAvoidsTheBusyLoop: one connection keeps its sub-loop
// busy (pipelined frames at 20 µs of callback each); ten connections
// opened then go to the other sub-loop under least-loaded, and are dealt
// five and five under round-robin and least-conns, which count
// connections, not work.
func TestLeastLoadedAvoidsTheBusyLoop(t *testing.T) {
	for _, assign := range reactors.AssignModes {
		t.Run(string(assign), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Loops, cfg.Assign, cfg.Callback = 2, string(assign), "20us"
			r := reactortest.Start(t, reactors.MainSub, cfg)
			hot := reactortest.DialBurst(t, r, 1)
			if _, err := hot.RecvCount(1, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			stopLoad := keepBusy(t, hot)
			defer stopLoad()
			busyLoop := 1
			if r.Stats().PerLoop[2].Conns == 1 {
				busyLoop = 2
			}
			if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().PerLoop[busyLoop].Busy > 0.5 }) {
				t.Skipf("the hot connection's loop never got busy: %+v", r.Stats().PerLoop)
			}
			before := r.Stats().PerLoop
			for range 10 {
				c := reactortest.DialBurst(t, r, 1)
				if _, err := c.RecvCount(1, 5*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			total := func(per []reactors.LoopStats) uint64 { return per[1].Conns + per[2].Conns }
			// Counters are published at most a millisecond late: wait for all 11.
			reactortest.WaitFor(2*time.Second, func() bool { return total(r.Stats().PerLoop) == 11 })
			after := r.Stats().PerLoop
			onBusy := after[busyLoop].Conns - before[busyLoop].Conns
			t.Logf("%s: %d of 10 new connections on the busy sub-loop (busy %.2f)", assign, onBusy, after[busyLoop].Busy)
			var ok bool
			switch assign {
			case reactors.AssignRoundRobin:
				ok = onBusy == 5
			case reactors.AssignLeastConns: // counts even: 1+onBusy against 10-onBusy
				ok = onBusy == 4 || onBusy == 5
			case reactors.AssignLeastLoaded:
				ok = onBusy <= 1
			}
			if !ok {
				t.Errorf("%s put %d of 10 new connections on the busy sub-loop", assign, onBusy)
			}
		})
	}
}

// keepBusy writes pipelined DATA frames on c and discards its echoes
// until the returned function is called.
func keepBusy(t *testing.T, c *reactortest.Client) func() {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	burst := make([]byte, 0, 64*80)
	for i := range 64 {
		burst = wire.AppendFrame(burst, wire.KindData, 0, 9, uint64(i), 0, make([]byte, 48))
	}
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			c.Conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := c.Conn.Write(burst); err != nil && !reactortest.IsTimeout(err) {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 1<<16)
		for {
			c.Conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := c.Conn.Read(buf); err != nil && !reactortest.IsTimeout(err) {
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
