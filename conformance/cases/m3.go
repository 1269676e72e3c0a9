package cases

import (
	"fmt"
	"io"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// M3: I1 across loops. The fresh connection must take the old one's fd
// number on another loop, which the case cannot choose: it tries up to
// m3Attempts times, and the reactor's own count of stale results whose fd
// another loop had registered meanwhile says when it happened.

// m3Attempts bounds M3's tries at putting the fresh connection on the old
// fd number on another loop: each takes about 250 ms.
const m3Attempts = 10

// m3Burst is the PINGs (32 B each: 1 MiB) the busy neighbour writes
// before each fresh connection: some milliseconds of its loop's time,
// long after the connect has been accepted.
const m3Burst = 32 << 10

// m3Callback is M3's callback cost, on a pool of one worker: the old
// result is still being computed when the fresh connection arrives, and
// the fresh one's own echo is computed after it.
const m3Callback = 100 * time.Millisecond

// m3Quiet is how long the new connection must get nothing after its own
// echo: the old result, due before that echo, would have come by then.
const m3Quiet = 150 * time.Millisecond

// m3Case is M3: a result computed for a closed connection never reaches
// the new connection that reused its fd number on another loop.
func m3Case() conformance.Case {
	return conformance.Case{
		ID:    "M3",
		Title: "stale results never cross to a reused fd on another loop",
		Claim: fmt.Sprintf("a connection reset while its echo is being computed, followed by a new connection that takes its fd number on another loop, never receives the old connection's result. "+
			"Needs a reference reactor with an offload pool and two data loops; inconclusive unless, in one of %d attempts, the reactor counted a stale result whose fd number another loop had registered by then (or the new connection received the stale result: a failure)", m3Attempts),
		Bound: fmt.Sprintf("the new connection's own echo within %v, and it first: the old result (a %v callback on one worker) is due before the new one, %v later; then nothing else for %v", echoBound, m3Callback, m3Callback, m3Quiet),
		Needs: conformance.NeedReference | conformance.NeedStats,
		Setup: conformance.Setup{Tweak: m3Tweak},
		Run:   runM3,
	}
}

// m3Tweak gives a multi-loop design two data loops and a design that
// takes a pool one worker, and makes each callback cost m3Callback.
func m3Tweak(d reactors.DesignName, cfg *reactors.Config) {
	withLoops(d, cfg, 2)
	withPool(d, cfg, 1)
	cfg.Callback = "fixed:" + m3Callback.String()
}

func runM3(c *conformance.C) {
	ref := c.Reference()
	if ref.Config.Workers == 0 {
		c.Skipf("%s runs callbacks on its own threads: no offload pool, no results coming back to a loop", ref.Design)
	}
	if _, multi := takes(ref.Design, ref.Config, func(cfg *reactors.Config) { cfg.Loops = 2 }); !multi {
		c.Skipf("%s has one data loop: there is no other loop for an fd number to be reused on", ref.Design)
	}
	inst := c.Instance()
	busy := &m3Neighbours{c: c, byLoop: map[int]*faults.TCPLink{}}
	_, err := inst.Stats()
	live := err == nil
	for i := range m3Attempts {
		if met := m3Attempt(c, i, busy, live); met {
			return
		}
	}
	if live {
		c.Inconclusivef("in %d attempts no stale result was counted whose fd number another loop had registered meanwhile: the fresh connection never took the old fd number on another loop", m3Attempts)
	}
	f := c.Stop()
	finalStats(c, f)
	if n := f.Stats.Counters.StaleResultsFdElsewhere; n == 0 {
		c.Inconclusivef("in %d attempts no stale result was counted whose fd number another loop had registered meanwhile (%d stale results): the fresh connection never took the old fd number on another loop", m3Attempts, f.Stats.Counters.StaleResults)
	}
}

// m3Attempt is one attempt of M3: connection A sends a frame and is reset
// while its echo is computed, B connects at once (the busy neighbour
// writing a PING burst meanwhile) and must get its own echo first and
// nothing else. With live statistics it reports whether the reactor
// counted A's result as stale with its fd registered elsewhere; without,
// false (the final counters tell).
func m3Attempt(c *conformance.C, i int, busy *m3Neighbours, live bool) bool {
	inst := c.Instance()
	oldToken, newToken := uint64(1000+i), uint64(1+i)
	var before reactors.Counters
	var was reactors.Stats
	if live {
		was, _ = inst.Stats()
		before = was.Counters
	}
	a := dialQuiet(c, fmt.Sprintf("attempt %d: old conn", i+1), inst.Addr())
	loopA := landedOn(c, was, live)
	// The neighbour before A's reset: one dialled after it would take the
	// fd number B is to reuse.
	neighbour := busy.on(loopA)
	if _, err := a.Write(dataFrame(oldToken, 0, 64)); err != nil {
		c.Fatalf("attempt %d: old connection: write: %v", i+1, err)
	}
	m3AwaitCounter(c, live, "the old frame offloaded", func(k reactors.Counters) bool { return k.TasksOffloaded > before.TasksOffloaded })
	a.Reset()
	m3AwaitCounter(c, live, "the old connection's reset seen", func(k reactors.Counters) bool { return k.ConnsClosed > before.ConnsClosed })
	if _, err := neighbour.Write(pingBurst(99, m3Burst)); err != nil {
		c.Fatalf("attempt %d: busy neighbour: write: %v", i+1, err)
	}
	var beforeB reactors.Stats
	if live {
		beforeB, _ = inst.Stats()
	}
	b := dialQuiet(c, fmt.Sprintf("attempt %d: new conn", i+1), inst.Addr())
	defer b.Close()
	loopB := landedOn(c, beforeB, live)
	m3CheckFresh(c, i, b, oldToken, newToken)
	if !live {
		return false
	}
	m3AwaitCounter(c, live, "the old connection's result counted as stale (it is due 100 ms after its offload; a reactor that hands it to whoever holds its fd number now, here or on another loop, never counts it: it went to a stranger)",
		func(k reactors.Counters) bool { return k.StaleResults > before.StaleResults })
	st, _ := inst.Stats()
	elsewhere := st.Counters.StaleResultsFdElsewhere - before.StaleResultsFdElsewhere
	c.Logf("attempt %d: old connection on loop %d, new on loop %d; stale results %d, of them with the fd registered on another loop %d", i+1, loopA, loopB, st.Counters.StaleResults-before.StaleResults, elsewhere)
	return elsewhere > 0
}

// m3CheckFresh checks the new connection b: its own echo first, and
// within the bound; then nothing for m3Quiet.
func m3CheckFresh(c *conformance.C, i int, b *faults.TCPLink, oldToken, newToken uint64) {
	conn := b.Conn()
	conn.SetDeadline(time.Now().Add(echoBound))
	if _, err := conn.Write(dataFrame(newToken, 0, 64)); err != nil {
		c.Fatalf("attempt %d: new connection: write: %v", i+1, err)
	}
	g, err := readFrame(conn)
	if err != nil {
		c.Fatalf("attempt %d: the new connection's echo: %v", i+1, err)
	}
	if g.h.Token == oldToken {
		c.Evidencef("attempt %d: connection A sent DATA token %d and was reset while its echo was computed; connection B then sent DATA token %d", i+1, oldToken, newToken)
		c.Fatalf("attempt %d: connection B received connection A's result (%s)", i+1, g)
	}
	if why := checkEcho(g, newToken, 0, 64); why != "" {
		c.Fatalf("attempt %d: %s", i+1, why)
	}
	conn.SetReadDeadline(time.Now().Add(m3Quiet))
	if g, err := readFrame(conn); err == nil {
		c.Evidencef("attempt %d: connection A sent DATA token %d and was reset; connection B sent DATA token %d", i+1, oldToken, newToken)
		c.Fatalf("attempt %d: connection B received an extra frame: %s", i+1, g)
	} else if !isTimeout(err) {
		c.Fatalf("attempt %d: after the echo: %v", i+1, err)
	}
}

// m3AwaitCounter waits (2 s at most) until the live counters satisfy ok,
// or fails the case naming what; without live counters it gives the
// reactor 20 ms instead.
func m3AwaitCounter(c *conformance.C, live bool, what string, ok func(reactors.Counters) bool) {
	if !live {
		time.Sleep(20 * time.Millisecond)
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, _ := c.Instance().Stats()
		if ok(st.Counters) {
			return
		}
		if time.Now().After(deadline) {
			c.Fatalf("not seen within 2 s: %s (counters: %s)", what, conformance.CounterLine(st.Counters))
		}
		time.Sleep(time.Millisecond)
	}
}

// m3Neighbours are M3's busy neighbours: connections, by the loop they
// are on, whose PING bursts keep that loop busy while a fresh connection
// arrives, so that a design whose listener wakes the first idle loop
// (shared, EPOLLEXCLUSIVE) gives the fresh connection to another loop.
type m3Neighbours struct {
	c      *conformance.C
	byLoop map[int]*faults.TCPLink
	last   *faults.TCPLink
}

// on returns a neighbour on loop (-1: unknown, any neighbour), dialling
// up to 8 new ones to find one there; each echo it gets is discarded.
func (n *m3Neighbours) on(loop int) *faults.TCPLink {
	if l, ok := n.byLoop[loop]; ok {
		return l
	}
	_, err := n.c.Instance().Stats()
	live := err == nil
	for try := 0; try < 8 && (try == 0 || live); try++ {
		was, _ := n.c.Instance().Stats()
		l := dialQuiet(n.c, fmt.Sprintf("busy neighbour %d", len(n.byLoop)+1), n.c.Instance().Addr())
		go io.Copy(io.Discard, l)
		at := landedOn(n.c, was, live)
		n.byLoop[at], n.last = l, l
		if at == loop || !live {
			break
		}
	}
	return n.last
}

// landedOn is the loop whose registered connections grew since was (the
// connection just dialled), waiting up to 2 s; -1 without live stats or
// if none did.
func landedOn(c *conformance.C, was reactors.Stats, live bool) int {
	if !live {
		return -1
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		st, _ := c.Instance().Stats()
		for i, l := range st.PerLoop {
			if i < len(was.PerLoop) && l.Conns > was.PerLoop[i].Conns {
				return l.Loop
			}
		}
		time.Sleep(time.Millisecond)
	}
	return -1
}

// pingBurst is n PING frames (token, seq 0..n-1) in one buffer.
func pingBurst(token uint64, n int) []byte {
	var b []byte
	for i := range n {
		b = wire.AppendFrame(b, wire.KindPing, 0, token, uint64(i), monoNow(), nil)
	}
	return b
}
