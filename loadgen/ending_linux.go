//go:build linux

package loadgen

// How a source's connection ends (the target closed it, a broken stream,
// a wire fault's close, a half-close) and what becomes of its outstanding
// frames.

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errEOF = errors.New("EOF")

// peerEnded handles the end of the connection from the target's side.
func (c *conn) peerEnded(err error) {
	if c.state == stClosing {
		c.endClosing("")
		return
	}
	c.targetClosed(err)
}

// targetClosed ends a connection the target closed (or that failed): what
// it had outstanding is lost, unless the target acknowledged our STOP (by
// the end of the run, if the close comes first).
func (c *conn) targetClosed(err error) {
	switch {
	case c.l.targetAckedStop():
		c.die("closed by the target after STOP_ACK: "+err.Error(), &c.acct.Unanswered)
		return
	case c.l.stopWasSent():
		c.die("closed by the target after STOP was sent: "+err.Error(), &c.pendingStop)
		return
	}
	if c.l.phase == phaseDraining && c.sentOutstanding() == 0 {
		c.die("closed by the target after sending ended: "+err.Error(), &c.acct.Lost)
		return
	}
	if n := c.sentOutstanding(); n > 0 {
		c.addEvidence("the target closed the connection (%v) with %d frames unanswered", err, n)
	}
	c.die("closed by the target: "+err.Error(), &c.acct.Lost)
}

// streamBroken handles an answer stream the decoder refuses.
func (c *conn) streamBroken(err error) {
	if c.state == stClosing && c.closing == closingOverSize {
		c.endClosing("") // a byte echo sent the over-size header back
		return
	}
	c.acct.Unexpected++
	c.addEvidence("answer stream broken: %v", err)
	c.die("answer stream broken: "+err.Error(), &c.acct.Lost)
}

// die ends the source for good; its sent, unsettled frames count in into.
// A source that dies while the run is sending shortens the run: that makes
// it invalid (result), unless the target acknowledged our STOP and the
// connection ended after STOP was sent. (A wire fault of ours never gets
// here: it closes and reconnects, see faultClose and endClosing.)
func (c *conn) die(why string, into *uint64) {
	c.settleSent(into, "")
	c.rewindUnsent()
	c.closeFd(false)
	if c.state != stDead {
		c.endedAt = c.l.now
		c.endedSending = c.l.phase == phaseSending
		c.endedAfterStop = c.l.stopWasSent()
	}
	c.state = stDead
	if c.ended == "" {
		c.ended = why
	}
}

// faultClose closes the connection as a fault's plan says; what it had
// outstanding is abandoned, what was not yet written goes back to the
// queue, and the source reconnects.
func (c *conn) faultClose(reset bool) {
	c.settleSent(&c.acct.Abandoned, "")
	c.replace(reset)
}

// replace closes the connection (with an RST if reset), puts the frames not
// yet written in full back in the queue and, while the run is sending,
// reconnects at once. It reports whether the run was sending; if not, the
// connection is left closed.
func (c *conn) replace(reset bool) (sending bool) {
	c.rewindUnsent()
	c.closeFd(reset)
	c.state = stClosed
	c.reconnectAt = c.l.now
	if c.l.phase != phaseSending {
		return false
	}
	c.reconnect()
	return true
}

// beginClosing waits for the target to close after a half-close or an
// over-size header.
func (c *conn) beginClosing(cause closingCause) {
	c.state = stClosing
	c.closing = cause
	c.closingDeadline = c.l.now + int64(closingWait)
}

// endClosing ends a closing connection (the target closed it, or why says
// why not) and reconnects; after sending, the source is done.
func (c *conn) endClosing(why string) {
	if why != "" {
		c.addEvidence("%s", why)
	}
	switch {
	case c.closing == closingOverSize || c.l.targetAckedStop():
		c.settleSent(&c.acct.Abandoned, "")
	case c.l.stopWasSent():
		c.settleSent(&c.pendingStop, "")
	default: // half-close: the target owed an answer to everything before the FIN
		c.settleSent(&c.acct.Lost, "unanswered when the target closed after our half-close")
	}
	if !c.replace(false) {
		c.state = stDead
	}
}

// settleSent settles every sent, unsettled frame, counting it in into; a
// non-empty why is evidence worth keeping.
func (c *conn) settleSent(into *uint64, why string) {
	n := 0
	for seq := c.lowSeq; seq < c.sentSeq; seq++ {
		s := &c.ring[seq&c.mask]
		if s.state == slotSent {
			if n == 0 && why != "" {
				c.addEvidence("seq %d and later: %s", seq, why)
			}
			s.state = slotDone
			c.live--
			*into++
			n++
		}
	}
	for c.lowSeq < c.nextSeq && c.ring[c.lowSeq&c.mask].state == slotDone {
		c.lowSeq++
	}
}

// rewindUnsent forgets the frames built but not written in full: they will
// be built again (same seq, new token) on the next connection.
func (c *conn) rewindUnsent() {
	for seq := c.sentSeq; seq < c.nextSeq; seq++ {
		c.ring[seq&c.mask].state = slotFree
		c.live--
	}
	c.nextSeq = c.sentSeq
	c.lowSeq = min(c.lowSeq, c.nextSeq)
	c.out, c.outOff = c.out[:0], 0
	c.plan, c.planPos, c.stepOff, c.planWait = nil, 0, 0, 0
}

// closeFd closes the current connection, if open.
func (c *conn) closeFd(reset bool) {
	if c.fd < 0 {
		return
	}
	if u := c.l.ur; u != nil && u.active {
		u.cancel(c) // before the close: the ring holds the socket until its operations end
	}
	if reset {
		closeReset(c.fd)
	} else {
		unix.Close(c.fd) // closing removes it from the epoll set
	}
	c.fd = -1
	c.inEpoll, c.interest = false, 0
}
