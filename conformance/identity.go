package conformance

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
)

// offloaded makes the reference reactor run callbacks on two workers at
// a cost, so results are in flight when their connection goes away.
// ONESHOT has no pool (its worker threads run callbacks themselves): it
// gets the cost only.
func offloaded(cost string) func(reactors.Design, *reactors.Config) {
	return func(d reactors.Design, cfg *reactors.Config) {
		if d != reactors.OneShot {
			cfg.Workers = 2
		}
		cfg.Callback = cost
	}
}

func identityCases() []Case {
	return []Case{{
		ID:      "I1",
		Title:   "stale result never reaches a reused fd",
		Claim:   "a connection closed with its echo still being computed, followed at once by a new connection (which gets the same fd number on the server), never receives the old connection's result",
		Mutants: []string{"fd-identity"}, WireFaults: []string{"fd-reuse-churn"},
		Bound: "the new connection's own echo within 2 s; then nothing else for 40 ms (twice the 20 ms callback: the old result, submitted first, is due before the new one)",
		Setup: Setup{Tweak: offloaded("fixed:20ms")},
		Run:   runI1,
	}, {
		ID:      "I2",
		Title:   "close with work pending leaves nothing behind",
		Claim:   "connections that go away (close, reset, half-close) with echoes queued and callbacks in flight leave no descriptor, slot or unaccounted frame behind; a half-closed client still gets every echo, then EOF",
		Mutants: []string{"leak-pending"}, WireFaults: []string{"reset", "half-close", "fd-reuse-churn"},
		Bound: "within 5 s of the last close, the server's descriptors (process targets) or open connections (in-process) are back to the baseline; at the end accepted = completed + rejected",
		Setup: Setup{Tweak: offloaded("fixed:20us")},
		Run:   runI2,
	}}
}

func runI1(c *C) {
	const rounds = 60
	addr := c.Instance().Addr()
	for i := 0; i < rounds; i++ {
		old := uint64(1000 + i)
		link := c.dialQuiet(fmt.Sprintf("round %d", i), addr)
		plan := faults.FdReuseChurn{Every: 1, Reset: i%2 == 1}.Apply(faults.Writes(dataFrame(old, 0, 64)))
		// A short gap lets the server close A (freeing its fd number)
		// before B arrives: a design that accepts before it reads (prio
		// serves listeners first) would otherwise give B a new number
		// and the case would not test anything. 5 ms is a quarter of the
		// callback: A's result is still in flight when B is accepted.
		plan = append(plan, faults.Step{Op: faults.OpSleep, For: 5 * time.Millisecond}, faults.Step{Op: faults.OpReconnect})
		if err := faults.Play(c.Context(), link, plan); err != nil {
			c.Fatalf("round %d: %v", i, err)
		}
		token := uint64(1 + i)
		conn := link.Conn() // the new connection
		conn.SetDeadline(time.Now().Add(echoBound))
		if _, err := conn.Write(dataFrame(token, 0, 64)); err != nil {
			c.Fatalf("round %d: write on the new connection: %v", i, err)
		}
		g, err := readFrame(conn)
		if err != nil {
			c.Fatalf("round %d: the new connection's echo: %v", i, err)
		}
		if g.h.Token == old {
			c.Evidencef("round %d: connection A sent DATA token %d and closed at once; connection B sent DATA token %d", i, old, token)
			c.Fatalf("round %d: connection B received connection A's result (%s)", i, g)
		}
		if why := checkEcho(g, token, 0, 64); why != "" {
			c.Fatalf("round %d: %s", i, why)
		}
		// The old result's callback started first; it is back by now.
		conn.SetReadDeadline(time.Now().Add(40 * time.Millisecond))
		if g, err := readFrame(conn); err == nil {
			c.Evidencef("round %d: connection A sent DATA token %d and closed at once; connection B sent DATA token %d", i, old, token)
			c.Fatalf("round %d: connection B received an extra frame: %s", i, g)
		} else if !isTimeout(err) {
			c.Fatalf("round %d: after the echo: %v", i, err)
		}
		link.Close()
	}
	if st, err := c.Instance().Stats(); err == nil {
		c.Logf("stale results dropped by the reactor: %d", st.Counters.StaleResults)
	}
}

func runI2(c *C) {
	inst := c.Instance()
	base := c.usage()
	baseFds := openFds(inst)
	var baseStats reactors.Stats
	live := false
	if st, err := inst.Stats(); err == nil {
		baseStats, live = st, true
	}
	const conns, frames, size = 30, 256, 8 << 10 // 2 MiB each, never read
	for i := 0; i < conns; i++ {
		token := uint64(i + 1)
		fr := dataFrames(token, frames, size)
		switch i % 3 {
		case 0: // close with everything pending
			link := c.dialQuiet(fmt.Sprintf("conn %d (close)", token), inst.Addr())
			plan := append(faults.Writes(fr...), faults.Step{Op: faults.OpClose})
			i2Play(c, link, plan, token)
		case 1: // reset half way
			link := c.dialQuiet(fmt.Sprintf("conn %d (reset)", token), inst.Addr())
			i2Play(c, link, faults.Reset{After: frames / 2}.Apply(faults.Writes(fr...)), token)
		case 2: // half-close: every echo, then EOF
			p := c.dial(fmt.Sprintf("conn %d (half-close)", token), inst.Addr())
			small := dataFrames(token, 32, 100)
			errc := playAsync(c, p, faults.HalfClose{}.Apply(faults.Writes(small...)))
			for seq := range small {
				p.expectEcho(c, token, uint64(seq), 100, echoBound)
			}
			if _, err := p.next(echoBound); !errors.Is(err, io.EOF) {
				c.Fatalf("conn %d: after the last echo of a half-closed connection: %v, want EOF", token, err)
			}
			if err := <-errc; err != nil {
				c.Fatalf("conn %d: %v", token, err)
			}
			p.close()
		}
	}
	// Sockets are what connections leave behind; other descriptors may
	// appear once (the Go runtime's netpoller is created lazily) and are
	// not the case's business.
	baseSockets := countSockets(baseFds)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var open int64
		var nowFds []string
		if live {
			st, _ := inst.Stats()
			open = int64(st.Counters.ConnsAccepted-baseStats.Counters.ConnsAccepted) - int64(st.Counters.ConnsClosed-baseStats.Counters.ConnsClosed)
			if open == 0 {
				break
			}
		} else if baseFds != nil {
			nowFds = openFds(inst)
			if countSockets(nowFds) <= baseSockets {
				break
			}
		} else if now := c.usage(); now.Fds <= base.Fds {
			break
		}
		if time.Now().After(deadline) {
			if live {
				c.Fatalf("%d of %d connections still open in the reactor 5 s after their clients left", open, conns)
			}
			c.Evidencef("server descriptors before: %s", strings.Join(baseFds, " "))
			c.Evidencef("server descriptors after:  %s", strings.Join(nowFds, " "))
			c.Fatalf("server has %d sockets 5 s after %d clients left, %d before they came", countSockets(nowFds), conns, baseSockets)
		}
		time.Sleep(20 * time.Millisecond) // polling a count in another process: nothing to wait on
	}
	if inst.Reference() == nil {
		return
	}
	f := c.Stop()
	if f.Stats == nil {
		return
	}
	l := f.Stats.Ledger
	c.Evidencef("final ledger: accepted %d, completed %d, rejected %d (abandoned %d); connections accepted %d, closed %d",
		l.Accepted, l.Completed, l.Rejected, l.Abandoned, f.Stats.Counters.ConnsAccepted, f.Stats.Counters.ConnsClosed)
	if !l.Balanced() {
		c.Fatalf("ledger does not balance: accepted %d ≠ completed %d + rejected %d", l.Accepted, l.Completed, l.Rejected)
	}
	if f.Stats.Counters.ConnsAccepted != f.Stats.Counters.ConnsClosed {
		c.Fatalf("%d connections accepted, %d closed", f.Stats.Counters.ConnsAccepted, f.Stats.Counters.ConnsClosed)
	}
}

// openFds lists the descriptors of a process target's process group
// (the server may be a wrapper's child) and what they refer to, as
// "pid:fd→target"; nil for in-process targets.
func openFds(inst Instance) []string {
	g, ok := inst.(interface{ Group() ([]int, error) })
	if !ok {
		return nil
	}
	pids, err := g.Group()
	if err != nil {
		return nil
	}
	out := []string{}
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			target, _ := os.Readlink(dir + "/" + e.Name())
			out = append(out, fmt.Sprintf("%d:%s→%s", pid, e.Name(), target))
		}
	}
	return out
}

func countSockets(fds []string) int {
	n := 0
	for _, f := range fds {
		if strings.Contains(f, "socket:") {
			n++
		}
	}
	return n
}

// i2Play plays plan on a connection that never reads: writes may block on
// a full window, so a write that cannot proceed for 300 ms ends the plan
// (the connection is then closed by the case's cleanup).
func i2Play(c *C, link *faults.TCPLink, plan []faults.Step, token uint64) {
	link.Conn().SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	err := faults.Play(c.Context(), link, plan)
	if err != nil && !isTimeout(err) {
		c.Logf("conn %d: %v", token, err)
	}
	link.Close()
}
