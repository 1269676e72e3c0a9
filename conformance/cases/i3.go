package cases

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// i3Case is I3: a client that half-closes gets every echo it is owed, then
// EOF.
func i3Case() conformance.Case {
	return conformance.Case{
		ID:         "I3",
		Title:      "half-close: every owed echo, then EOF",
		Claim:      "a client that has sent more than the kernel buffers hold and shut down its write side gets every byte back, in order, then EOF, though the server holds echoes in its own buffers when it reads the FIN. Inconclusive unless the server was seen reading the FIN while holding echoes, its end still open (CLOSE_WAIT: a server seen only after it closed, in LAST_ACK or gone, may have dropped what it did not send, and proved no holding) (a server that writes everything before it reads again never is)",
		WireFaults: []string{"half-close"},
		Bound:      fmt.Sprintf("%s; then the rest, every byte checked, and EOF within %v; every connection's echo is judged", halfCloseStimulus, i3RestBound),
		Timeout:    150 * time.Second, // 3 × (fill ≤ 15 s + FIN ≤ 10 s + the rest ≤ 20 s)
		Run:        runI3,
	}
}

// i3RestBound is how long the half-closed client may wait for the rest of
// its echoes and the EOF once the server has read its FIN.
const i3RestBound = 20 * time.Second

func runI3(c *conformance.C) {
	frameEcho := c.Reference() != nil
	// The client holds the server's echoes back until it reads the FIN, so
	// that a server which drops what it holds at EOF has something to drop.
	// A connection given up on still owes every byte and EOF.
	limit, why := fillLimit(c)
	c.Logf("%s", why)
	h := halfCloseHolding(c, limit, 1, func(l *loaded) bool {
		if err := l.readRest(i3RestBound, frameEcho); err != nil {
			c.Fatalf("%s, half-closed after sending %d bytes: %v", l.name, l.sent, err)
		}
		return true
	})
	l := h.l
	if err := l.readRest(i3RestBound, frameEcho); err != nil {
		c.Fatalf("%s, half-closed after sending %d bytes: %v", l.name, l.sent, err)
	}
	if h.finRead && h.held > echoThreshold(c) {
		return
	}
	if h.neverHoldsAtFIN(c, true) {
		c.InconclusiveByDesignf("every byte came back, then EOF; but %s", h.neverHoldsAtFINReason())
	}
	c.Inconclusivef("every byte came back, but the server was not seen reading the FIN while it held echoes (read it: %v; held then: at least %d bytes): it had nothing left to drop at EOF", h.finRead, h.held)
}

// readRest reads the echo to its end within bound and reports how it
// ended: io.EOF after every byte owed is the one right ending. A byte echo
// owes every byte sent; a frame echo (a reference reactor) owes the
// complete frames, and rightly drops a partial last frame at EOF (the
// client's last write may have been cut short by its deadline).
func (l *loaded) readRest(bound time.Duration, frameEcho bool) error {
	owed := l.sent
	if frameEcho {
		owed -= l.sent % streamFrameSize
	}
	deadline := time.Now().Add(bound)
	for {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d bytes owed back after %v, then nothing", l.read, owed, bound)
		}
		_, err := l.readSome(256<<10, time.Until(deadline))
		if errors.Is(err, io.EOF) {
			if l.read < owed {
				return fmt.Errorf("the server closed the connection after %d of %d bytes owed: it dropped %d bytes of echoes", l.read, owed, owed-l.read)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("after %d of %d bytes owed: %w", l.read, owed, err)
		}
		if l.read > owed {
			return fmt.Errorf("%d bytes back, %d owed", l.read, owed)
		}
	}
}
