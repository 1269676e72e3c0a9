package cases

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// m2Case is M2: each connection is served by one loop only: every echo
// comes back whole and in order.
func m2Case() conformance.Case {
	return conformance.Case{
		ID:      "M2",
		Title:   "one loop per connection",
		Claim:   fmt.Sprintf("%d connections each pipelining %d frames of mixed sizes (1 B to 64 KiB), half of them a frame a write and half %d, get every echo back whole and in order: two loops serving one socket interleave its reads and writes. A reference reactor also registers each connection on one loop only: the connections its loops registered (Σ per-loop conns) are no more than it accepted", m2Conns, m2Frames, m2Batch),
		Bound:   fmt.Sprintf("each echo within %v of the previous one on its connection (a frame is served within a round); the whole exchange within the case's %v", echoBound, m2Timeout),
		Setup:   conformance.Setup{Tweak: twoDataLoops},
		Timeout: m2Timeout,
		Run:     runM2,
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

// M2's load: m2Conns connections of m2Frames frames each, the even
// tokens' written m2Batch frames a write; the case ends after m2Timeout.
const (
	m2Conns   = 16
	m2Frames  = 2000
	m2Batch   = 32
	m2Timeout = 90 * time.Second
)

func runM2(c *conformance.C) {
	const conns, frames = m2Conns, m2Frames
	addr := c.Instance().Addr()
	errs := make(chan error, conns)
	for i := range conns {
		token := uint64(i + 1)
		p := dial(c, fmt.Sprintf("conn %d", token), addr)
		sizes := m2Sizes(rand.New(rand.NewPCG(token, 18)), frames)
		// Half the connections write 32 frames at a time, half one: a
		// server whose two loops both serve a socket is caught when both
		// read it between two of its own writes, which a stream arriving
		// in small pieces makes far likelier than large ones (a C server
		// reading 64 KiB at a time: 6 of 10 runs with every connection
		// writing 32 frames at a time).
		batch := m2Batch
		if token%2 == 1 {
			batch = 1
		}
		pipeline(c, p, token, sizes, batch)
		go func() { errs <- m2Read(p, token, sizes) }()
	}
	var bad []string
	for range conns {
		if err := <-errs; err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		c.Evidencef("sent: %d connections, each %d DATA frames of 1 B to 64 KiB pipelined (odd tokens a frame a write, even ones %d)", conns, frames, m2Batch)
		c.Fatalf("%d of %d connections: %s", len(bad), conns, strings.Join(firstFew(bad, 4), "; "))
	}
	if c.Reference() == nil {
		return
	}
	f := c.Stop()
	finalStats(c, f)
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
func pipeline(c *conformance.C, p *peer, token uint64, sizes []int, batch int) {
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
