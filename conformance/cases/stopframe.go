package cases

import (
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/wire"
)

// sendStop writes a STOP (send time now) on p, followed by extra frames in
// the same write.
func sendStop(c *conformance.C, p *peer, extra ...[]byte) time.Time {
	b := wire.AppendFrame(nil, wire.KindStop, 0, 0, 1, monoNow(), nil)
	for _, e := range extra {
		b = append(b, e...)
	}
	at := time.Now()
	p.write(c, b)
	return at
}

// awaitAck reads p until STOP_ACK and returns it with the frames before it.
func awaitAck(c *conformance.C, p *peer, timeout time.Duration) (wire.Ledger, []got) {
	deadline := time.Now().Add(timeout)
	var before []got
	for {
		g, err := p.next(time.Until(deadline))
		if err != nil {
			c.Evidencef("control connection before the error: %v", before)
			c.Fatalf("no STOP_ACK within %v: %v", timeout, err)
		}
		if g.h.Kind == wire.KindStopAck {
			l, err := wire.DecodeLedger(g.payload)
			if err != nil {
				c.Fatalf("STOP_ACK payload %q: %v", g.payload, err)
			}
			return l, before
		}
		before = append(before, g)
	}
}
