package conformance

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// The multi-loop group (M): what a server with several loops must keep
// that one loop keeps by construction. Every case holds for any server; a
// reference reactor's counters add a precondition (M1, M3) or a second
// check (M2, M5), and a one-loop design passes them trivially where the
// claim is about loops it does not have.

func multiLoopCases() []Case {
	return []Case{{
		ID:      "M1",
		Title:   "accept storm beyond the handoff queue",
		Claim:   "every connection of a storm of 512 opened at once, each sending one frame, is accepted and answered, also when the storm outruns the queue through which one loop hands connections to another. Inconclusive on a server that hands connections over (its counters show handoffs) unless a handoff was seen finding the queue full",
		Mutants: []string{"handoff-drop-when-full"},
		Bound:   "every connection's echo within 10 s of the storm's start: an acceptor accepts up to 64 a round and a sub-loop registers what its ingress holds every round, so even with 2 sub-loops of 4 items each the 512 are handed over in about 64 rounds (milliseconds each); but a correct server whose listen backlog is shorter than the storm (asyncio's 100) drops SYNs, which the client's kernel sends again after 1, 3 and 7 s: 10 s lets a connection through on its third retransmission",
		Setup:   Setup{Tweak: m1Tweak},
		Run:     runM1,
	}, {
		ID:      "M2",
		Title:   "one loop per connection",
		Claim:   "16 connections each pipelining 2,000 frames of mixed sizes (1 B to 64 KiB), half of them a frame a write and half 32, get every echo back whole and in order: two loops serving one socket interleave its reads and writes. A reference reactor also registers each connection on one loop only: the connections its loops registered (Σ per-loop conns) are no more than it accepted",
		Mutants: []string{"serve-on-two-loops"},
		Bound:   "each echo within 2 s of the previous one on its connection (a frame is served within a round); the whole exchange within 60 s",
		Setup:   Setup{Tweak: twoDataLoops},
		Timeout: 90 * time.Second,
		Run:     runM2,
	}, m3Case(), m4Case(), {
		ID:      "M5",
		Title:   "STOP observed by every loop",
		Claim:   "with one connection on one loop and every other loop idle, a STOP frame is acknowledged, and every loop observes it, within the bound: an idle loop must be woken for it",
		Mutants: []string{"stop-wakes-one-loop"},
		Bound:   "STOP_ACK and every loop's observation ≤ 1 s: the loop that reads the STOP wakes each other loop through its ingress eventfd (one write, one wakeup: microseconds), each observes it at the top of its next round, and with nothing offloaded the ACK follows once all have quiesced; 1 s is a margin of hundreds for a descheduled VM",
		Needs:   NeedControl | NeedStats,
		Setup:   Setup{Tweak: twoDataLoops},
		Run:     runM5,
	}}
}

// m1IngressCap is the sub-loops' ingress in M1: a few items, so that a
// storm outruns it (2 is the smallest Config accepts).
const m1IngressCap = 4

// m1Tweak gives a design that hands connections over two sub-loops with
// tiny ingresses, so the storm finds them full.
func m1Tweak(d reactors.Design, cfg *reactors.Config) {
	if withLoops(d, cfg, 2) && d == reactors.MainSub {
		cfg.IngressCap = m1IngressCap
	}
}

// m1Bound is M1's bound on each connection of the storm (see its Bound).
const m1Bound = 10 * time.Second

func runM1(c *C) {
	const conns = 512
	addr := c.Instance().Addr()
	var wg sync.WaitGroup
	errs := make([]error, conns)
	start := make(chan struct{})
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = stormOne(addr, uint64(i+1), m1Bound)
		}()
	}
	ext0, extErr := tcpExt()
	close(start)
	wg.Wait()
	var bad []string
	for _, err := range errs {
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	// A full accept queue drops SYNs, which clients send again after 1, 3
	// and 7 s: the kernel's count tells a backlog shorter than the storm
	// (or an acceptor too slow for it) from a server that loses
	// connections it accepted.
	overflow := ""
	if ext1, err := tcpExt(); err == nil && extErr == nil {
		n, d := ext1["ListenOverflows"]-ext0["ListenOverflows"], ext1["ListenDrops"]-ext0["ListenDrops"]
		c.Evidencef("the kernel counted %d accept queue overflows and %d listen drops during the storm (TcpExt ListenOverflows, ListenDrops, this network namespace)", n, d)
		if n > 0 {
			overflow = fmt.Sprintf(" (the kernel counted %d accept queue overflows in this network namespace during the storm, most likely this listener's: SYNs dropped and sent again after 1, 3 and 7 s point to a listen backlog shorter than the storm, or an acceptor too slow for it)", n)
		}
	}
	st, ok := multiLoopStats(c)
	if ok {
		k := st.Counters
		c.Evidencef("handoffs %d, handoffs registered %d, pushes that found a full ingress %d, most held by the acceptor at once %d, refused %d",
			k.Handoffs, k.HandoffsIn, k.HandoffFull, k.HandoffBacklogMax, k.ConnsRefused)
	}
	if len(bad) > 0 {
		c.Evidencef("sent: %d connections dialled at once, one 64 B frame each", conns)
		c.Fatalf("%d of %d connections not served within %v: %s%s", len(bad), conns, m1Bound, strings.Join(firstFew(bad, 5), "; "), overflow)
	}
	if ok && st.Counters.Handoffs > 0 && st.Counters.HandoffFull == 0 {
		c.Inconclusivef("every connection was served, but no handoff found a sub-loop's ingress full: the storm did not outrun the sub-loops, so the full queue was not exercised")
	}
}

// m2Sizes is n payload sizes, mostly small, some up to 64 KiB (about
// 1.6 KiB on average): frames that end and begin anywhere in a read.
func m2Sizes(rng *rand.Rand, n int) []int {
	out := make([]int, n)
	for i := range out {
		switch p := rng.IntN(100); {
		case p < 90:
			out[i] = 1 + rng.IntN(1024)
		case p < 99:
			out[i] = 1024 + rng.IntN(15<<10)
		default:
			out[i] = 16<<10 + rng.IntN(48<<10+1)
		}
	}
	return out
}

func runM2(c *C) {
	const conns, frames = 16, 2000
	addr := c.Instance().Addr()
	errs := make(chan error, conns)
	for i := range conns {
		token := uint64(i + 1)
		p := c.dial(fmt.Sprintf("conn %d", token), addr)
		sizes := m2Sizes(rand.New(rand.NewPCG(token, 18)), frames)
		// Half the connections write 32 frames at a time, half one: a
		// server whose two loops both serve a socket is caught when both
		// read it between two of its own writes, which a stream arriving
		// in small pieces makes far likelier than large ones (a C server
		// reading 64 KiB at a time: 6 of 10 runs with every connection
		// writing 32 frames at a time).
		batch := 32
		if token%2 == 1 {
			batch = 1
		}
		c.pipeline(p, token, sizes, batch)
		go func() { errs <- m2Read(p, token, sizes) }()
	}
	var bad []string
	for range conns {
		if err := <-errs; err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		c.Evidencef("sent: %d connections, each %d DATA frames of 1 B to 64 KiB pipelined (odd tokens a frame a write, even ones 32)", conns, frames)
		c.Fatalf("%d of %d connections: %s", len(bad), conns, strings.Join(firstFew(bad, 4), "; "))
	}
	if c.Reference() == nil {
		return
	}
	f := c.Stop()
	c.finalStats(f)
	var registered uint64
	var per []string
	for _, l := range f.Stats.PerLoop {
		registered += l.Conns
		per = append(per, fmt.Sprintf("loop %d (%s) %d", l.Loop, l.Role, l.Conns))
	}
	c.Evidencef("connections registered per loop: %s; accepted %d", strings.Join(per, ", "), f.Stats.Counters.Accepts)
	if registered > f.Stats.Counters.Accepts {
		c.Fatalf("the loops registered %d connections, but only %d were accepted: a connection was registered on two loops", registered, f.Stats.Counters.Accepts)
	}
}

// pipeline writes DATA (token, seq 0..) of the given sizes on p, batch
// frames a write, in a goroutine the case waits for when it ends (a
// write blocked past 10 s, or on a closed connection, gives up).
func (c *C) pipeline(p *peer, token uint64, sizes []int, batch int) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b []byte
		for seq, size := range sizes {
			b = append(b, dataFrame(token, uint64(seq), size)...)
			if seq%batch == batch-1 || seq == len(sizes)-1 {
				p.link.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := p.link.Write(b); err != nil {
					return
				}
				b = b[:0]
			}
		}
	}()
	c.Cleanup(func() { p.close(); <-done })
}

// m2Read checks p's echoes: every frame, in order, whole, each within
// echoBound of the one before.
func m2Read(p *peer, token uint64, sizes []int) error {
	for seq, size := range sizes {
		g, err := p.next(echoBound)
		if err != nil {
			return fmt.Errorf("conn %d: echo %d of %d: %v", token, seq, len(sizes), err)
		}
		if why := checkEcho(g, token, uint64(seq), size); why != "" {
			return fmt.Errorf("conn %d: echo %d (%d B): %s", token, seq, size, why)
		}
	}
	return nil
}

// m5Bound bounds M5's STOP_ACK and every loop's observation of the STOP.
const m5Bound = time.Second

func runM5(c *C) {
	inst := c.Instance()
	// One connection, served once, then idle: it is on one loop, and
	// every loop waits in epoll_wait when the STOP comes.
	data := c.dial("data conn", inst.Addr())
	data.write(c, dataFrame(1, 0, 64))
	data.expectEcho(c, 1, 0, 64, echoBound)
	ctl := c.dial("control conn", inst.ControlAddr())
	time.Sleep(50 * time.Millisecond) // every loop back in epoll_wait
	sent := sendStop(c, ctl)
	ledger, _ := awaitAck(c, ctl, m5Bound)
	ackAfter := time.Since(sent)
	c.Evidencef("STOP_ACK %v after STOP; ledger %+v", ackAfter.Round(time.Microsecond), ledger)
	if !ledger.Balanced() {
		c.Errorf("STOP_ACK ledger does not balance: %+v", ledger)
	}
	f := c.Stop()
	c.finalStats(f)
	var seen []string
	for _, l := range f.Stats.PerLoop {
		obs := time.Duration(l.StopObservedNs)
		seen = append(seen, fmt.Sprintf("loop %d (%s) %v", l.Loop, l.Role, obs))
		switch {
		case l.StopObservedNs < 0:
			c.Errorf("loop %d (%s) never observed the STOP", l.Loop, l.Role)
		case obs > m5Bound:
			c.Errorf("loop %d (%s) observed the STOP %v after it was issued (bound %v)", l.Loop, l.Role, obs.Round(time.Millisecond), m5Bound)
		}
	}
	c.Evidencef("STOP observed: %s", strings.Join(seen, ", "))
	if ackAfter > m5Bound {
		c.Errorf("STOP_ACK came %v after STOP (bound %v)", ackAfter.Round(time.Millisecond), m5Bound)
	}
}

// pingBurst is n PING frames (token, seq 0..n-1) in one buffer.
func pingBurst(token uint64, n int) []byte {
	var b []byte
	for i := range n {
		b = wire.AppendFrame(b, wire.KindPing, 0, token, uint64(i), monoNow(), nil)
	}
	return b
}
