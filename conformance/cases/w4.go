package cases

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// w4Case is W4: a half-closed client that leaves its echoes unread does
// not delay the other connections.
func w4Case() conformance.Case {
	_, arithmetic := w4RoundTripLimit(nil, w4Light)
	return conformance.Case{
		ID:         "W4",
		Title:      "a half-closed peer that does not read does not freeze the others",
		Claim:      fmt.Sprintf("once the server has read the FIN of a client that leaves the echoes the server holds for it unread, %d other connections doing a round trip every %v are each served within the bound. Inconclusive unless the server was seen reading that FIN while holding echoes (its end open, in CLOSE_WAIT), holding them to the end, and delivering them afterwards (a server that writes everything before it reads again never holds any; one that drops them never held them)", w4Light, probeEvery),
		WireFaults: []string{"half-close"},
		Timeout:    140 * time.Second, // 3 × (fill ≤ 15 s + FIN ≤ 10 s + the echoes owed ≤ 20 s) + probes
		Bound: fmt.Sprintf("light round trips over %v within the bound the budgets allow (at the default budgets: %s), %s; one unanswered for twice the bound fails at once. Before the probes, %s; the client then reads nothing until the probes are done, and gets every echo owed within %v",
			probeFor, arithmetic, overBoundRule, halfCloseStimulus, w4OwedBound),
		Run: runW4,
	}
}

// w4Light is the light connections W4 and W5 probe; w4OwedBound is how
// long W4's half-closed client may wait for the echoes owed once the
// probes are done.
const (
	w4Light     = 4
	w4OwedBound = 20 * time.Second
)

func runW4(c *conformance.C) {
	bound, limit, peers := lightProbes(c)
	// A server that has not paused reads the FIN at once, with echoes
	// queued; one that has is let on, 4 KiB at a time, until it reads it.
	// A connection given up on is read to the end of what it is owed,
	// then closed: the server held nothing for it.
	frameEcho := c.Reference() != nil
	h := halfCloseHolding(c, limit, 100, func(l *loaded) bool {
		err := l.readOwed(w4OwedBound, frameEcho)
		if err != nil {
			c.Evidencef("%s, given up on: %v", l.name, err)
		}
		l.conn.Close()
		return err == nil
	})
	l := h.l
	if !h.finRead || h.held <= echoThreshold(c) {
		if h.neverHoldsAtFIN(c, h.finRead && l.readOwed(w4OwedBound, frameEcho) == nil) {
			c.InconclusiveByDesignf("%s", h.neverHoldsAtFINReason())
		}
		c.Inconclusivef("the server was not seen reading the half-closed client's FIN while it held echoes for it (read it: %v; held then: at least %d bytes): it had nothing left to flush to a client that does not read", h.finRead, h.held)
	}
	// The half-closed client reads nothing from here on.
	results := probeAll(c, peers, wire.KindData, 2*bound)
	// Probes that will fail the case are explained by diagnose now,
	// while the half-closed client still leaves its echoes unread: the
	// condition they were delayed under holds until it reads below. The
	// lines join the evidence only if the case fails.
	var d diagnosis
	if anyBroke(results, bound) {
		d = diagnoseServing(c.Context(), c.Instance(), "the "+diagnosisWindow.String()+" after the probes, the half-closed client still not reading")
	}
	holding := false
	if err := l.sample(); err == nil {
		holding = l.held() > echoThreshold(c)
		c.Evidencef("after the probes: the server holds %d bytes for the half-closed client (%v)", l.held(), l.q)
	}
	// What was counted as held is a candidate until it arrives: a server
	// that dropped the echoes (and kept its end open) held nothing while
	// the others were probed. The bytes are what is owed here; the EOF
	// after them is I3's claim.
	delivered := l.readOwed(w4OwedBound, frameEcho)
	if delivered == nil {
		c.Evidencef("afterwards the half-closed client read every echo owed (%d bytes): the server had held them", l.read)
	}
	if delivered != nil {
		c.Inconclusivef("the echoes counted as held for the half-closed client did not all arrive once it read (%v): the server did not hold them, so a client leaving echoes unread was not tested (that the echoes are owed is I3's claim)", delivered)
	}
	judgeProbes(c, peers, results, bound, "delayed while a half-closed client leaves its echoes unread")
	if c.Failed() {
		d.record(c)
	}
	if !c.Failed() && !holding {
		c.Inconclusivef("the others were served, but by the end of the probes the server no longer held echoes for the half-closed client: it was not holding them throughout")
	}
}

// w4RoundTripLimit is W4's (and W5's) limit on a light round trip: the
// wait the budgets allow for a round of the light sources and one whose
// output is blocked, each turn costing syscalls only (no callback cost is
// configured), loadedMargin times, at least loadedFloor (as S1's).
func w4RoundTripLimit(ref *conformance.Reference, light int) (limit time.Duration, arithmetic string) {
	cfg := reactors.DefaultConfig()
	if ref != nil {
		cfg = ref.Config
	}
	turns := cfg.Budgets.Consume + 1 + light
	wait := time.Duration(turns) * turnSyscalls
	limit = max(loadedFloor, loadedMargin*wait)
	return limit, fmt.Sprintf("wait ≤ (consume budget %d + 1 blocked + %d light) turns × %v = %v; bound max(%v, %d × wait) = %v", cfg.Budgets.Consume, light, turnSyscalls, wait, loadedFloor, loadedMargin, limit)
}

// readOwed reads, within bound, every byte of the echo owed (all that
// was sent, for a byte echo; the complete frames, for a frame echo), each
// checked; what comes after, an EOF included, is not its business.
func (l *loaded) readOwed(bound time.Duration, frameEcho bool) error {
	owed := l.sent
	if frameEcho {
		owed -= l.sent % streamFrameSize
	}
	deadline := time.Now().Add(bound)
	for l.read < owed {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d bytes owed back after %v, then nothing", l.read, owed, bound)
		}
		if _, err := l.readSome(int(min(owed-l.read, 256<<10)), time.Until(deadline)); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the server closed the connection after %d of %d bytes owed: it dropped %d bytes of echoes", l.read, owed, owed-l.read)
			}
			return fmt.Errorf("after %d of %d bytes owed: %w", l.read, owed, err)
		}
	}
	return nil
}
