package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/wire"
)

// w5Case is W5: a client that keeps sending and never reads does not delay
// the other connections.
func w5Case() conformance.Case {
	_, arithmetic := w4RoundTripLimit(nil, w4Light)
	return conformance.Case{
		ID:           "W5",
		Title:        "a peer that stops reading does not freeze the others",
		Claim:        fmt.Sprintf("while one client keeps sending and never reads (nor half-closes), so that the server's writes back to it back up, %d other connections doing a round trip every %v are each served within the bound. Inconclusive unless the stalled connection's path back was seen backed up with the server's end open (bytes in the server's send queue and in the client's receive queue) before the probes and after them", w4Light, probeEvery),
		BlackBoxBugs: []string{"block-loop-on-full"},
		Bound: fmt.Sprintf("light round trips over %v within W4's bound (at the default budgets: %s), %s; one unanswered for twice the bound fails at once. The stalled client (%d KiB receive buffer) fills as in I2 until the server stops reading it or holds %d KiB of echoes it cannot write, then goes on sending (writes of %d KiB, each given %v) while the others are probed",
			probeFor, arithmetic, overBoundRule, smallClientBuf>>10, holdSome>>10, w5Write>>10, w5WriteWait),
		Run: runW5,
	}
}

// While the others are probed, W5's stalled client writes w5Write bytes
// at a time, each write given w5WriteWait.
const (
	w5Write     = 64 << 10
	w5WriteWait = 20 * time.Millisecond
)

// runW5 stalls one connection (it sends, and reads nothing) until the
// server's writes to it back up, then probes four others while it goes
// on sending.
func runW5(c *conformance.C) {
	bound, limit, peers := lightProbes(c)
	l := dialLoaded(c, "stalled conn", 100)
	f := fillLoaded(c, l, limit, holdSome, false)
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
			if _, err := l.writeSome(w5Write, w5WriteWait); err != nil {
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
