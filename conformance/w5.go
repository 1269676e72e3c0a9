package conformance

import (
	"time"

	"github.com/reactorlab/reactorlab/wire"
)

// w5Case is W5: a client that keeps sending and never reads does not delay
// the other connections.
func w5Case() Case {
	return Case{
		ID:           "W5",
		Title:        "a peer that stops reading does not freeze the others",
		Claim:        "while one client keeps sending and never reads (nor half-closes), so that the server's writes back to it back up, four other connections doing a round trip every 10 ms are each served within the bound. Inconclusive unless the stalled connection's path back was seen backed up with the server's end open (bytes in the server's send queue and in the client's receive queue) before the probes and after them",
		BlackBoxBugs: []string{"block-loop-on-full"},
		Bound:        "light round trips ≤ max(500 ms, 20 × the wait the budgets allow: (consume budget + 5 sources) turns of at most 200 µs of syscalls each) over 1.5 s, at most 2% over it, none over twice it (W4's bound); one unanswered for twice the bound fails at once. The stalled client (4 KiB receive buffer) fills as in I2 until the server stops reading it or holds 256 KiB of echoes it cannot write, then goes on sending (writes of 64 KiB, each given 20 ms) while the others are probed",
		Run:          runW5,
	}
}

// runW5 stalls one connection (it sends, and reads nothing) until the
// server's writes to it back up, then probes four others while it goes
// on sending.
func runW5(c *C) {
	bound, limit, peers := c.lightProbes()
	l := c.dialLoaded("stalled conn", 100)
	f := c.fill(l, limit, holdSome, false)
	c.Evidencef("the stalled client: %s", f.why)
	if !f.established() {
		c.Inconclusivef("the server neither stopped reading the client that does not read nor held echoes it could not write (%s): its writes never backed up into the server, so nothing could stall it", f.why)
	}
	if !l.q.outputBlocked() || !l.q.serverOpen() {
		c.Inconclusivef("the server's writes to the client that does not read were not seen backing up with its end open (%v): nothing was stalled", l.q)
	}
	// The stalled client goes on sending while the others are probed.
	stop, sent := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				sent <- nil
				return
			default:
			}
			if _, err := l.writeSome(64<<10, 20*time.Millisecond); err != nil {
				sent <- err
				return
			}
		}
	}()
	results := probeAll(c, peers, wire.KindData, 2*bound)
	close(stop)
	if err := <-sent; err != nil {
		c.Evidencef("the stalled client's writes ended: %v", err)
	}
	judgeProbes(c, peers, results, bound, "delayed while a client that keeps sending does not read")
	if c.Failed() {
		return
	}
	if err := l.sample(); err != nil {
		c.Inconclusivef("the others were served, but the stalled connection's queues could not be read afterwards: %v", err)
	}
	c.Evidencef("after the probes, the stalled connection: %v", l.q)
	if !l.q.outputBlocked() || !l.q.serverOpen() {
		c.Inconclusivef("the others were served, but by the end of the probes the server's writes to the stalled client were no longer backed up with its end open (%v): it was not stalled throughout", l.q)
	}
}
