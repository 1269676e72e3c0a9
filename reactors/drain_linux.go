//go:build linux

package reactors

import (
	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/slots"
)

// The drain stop (Reactor.Drain), a server's answer to SIGTERM: it closes
// the listeners, as STOP does, so new connections are refused; it answers
// every complete DATA frame it has read (no REJECT: admission stays open,
// reading ends when each loop quiesces); once a connection's out-queue
// has drained it shuts down the write side (a FIN, never an RST for
// unread input), then reads and discards what the client still sends
// until its EOF, and closes it. The reactor exits when every connection
// is closed or the stop grace has passed (then the rest are closed as
// they are). Each echo stream is thus an exact prefix of what was sent,
// ending in FIN.

// Drain stops r as a server stops on SIGTERM (see above) and returns the
// ledger as Stop does; Wait returns once the last connection has closed
// or the grace has passed. The first stop (Stop, Drain or a STOP frame)
// decides how r stops; a later one only waits for it.
func (r *Reactor) Drain() (Ledger, error) {
	if r.started.Load() && !r.stopClaimed.Load() {
		r.draining.Store(true) // read by the loops only once stopRequested is set
	}
	return r.Stop()
}

// sweepForDrain is the drain stop's step at quiesce: every connection's
// complete frames still buffered are answered, and each whose out-queue
// is then empty is shut for writing.
func (l *Loop) sweepForDrain() {
	var conns []*Source
	l.table.Range(func(_ slots.Ref, s *Source) bool {
		if s.kind == kindConn && s.state != stateClosed {
			conns = append(conns, s)
		}
		return true
	})
	for _, s := range conns {
		if s.in != nil {
			l.lendOut(s)
			l.answerBuffered(s, l.frameLimit())
		}
		if l.flush(s) && l.oneShot {
			l.rearm.Rearm(s)
		}
	}
}

// shutWriteIfDrained shuts s for writing when the drain stop has reached
// it (its loop quiesced) and its out-queue is empty; from then on s is
// read only to discard (discardInput). It reports whether s is shut.
func (l *Loop) shutWriteIfDrained(s *Source) bool {
	if s.shutWr {
		return true
	}
	if !l.quiesced || !l.r.draining.Load() || s.kind != kindConn || !s.out.Empty() || s.urgentPending {
		return false
	}
	if err := unix.Shutdown(s.fd, unix.SHUT_WR); err != nil {
		l.closeSource(s)
		return false
	}
	s.shutWr = true
	l.r.drainOpen.Add(1)
	return true
}

// discardInput reads and drops what the client of a shut connection still
// sends (so closing it later sends no RST), at most discardReads reads per
// call; its EOF or an error closes it. It reports whether it stopped with
// input maybe left (its reads ran out before EAGAIN): an edge-triggered
// source must then be read again without a new edge (queueDiscard).
func (l *Loop) discardInput(s *Source) (more bool) {
	var buf [16 << 10]byte
	for range discardReads {
		n, e := rawRead(s.fd, buf[:])
		switch {
		case e == unix.EAGAIN:
			return false
		case e != 0 || n == 0:
			l.closeSource(s)
			return false
		}
	}
	return true
}

// discardReads bounds one discardInput, so that a client that keeps
// sending does not hold its loop from the other connections' flushes.
const discardReads = 16

// queueDiscard puts s in l.discardMore, once, for stopStep to read again.
func (l *Loop) queueDiscard(s *Source) {
	if !s.discardQueued {
		s.discardQueued = true
		l.discardMore = append(l.discardMore, s)
	}
}

// retryDiscards reads again, once each, the shut connections whose
// discardInput ran out of reads (discardMore), keeping those that run out
// again; the loop polls every millisecond while it stops, so what a client
// sent after its last edge is read within a round of it, up to its EOF.
func (l *Loop) retryDiscards() {
	pending := l.discardMore
	l.discardMore = nil
	for _, s := range pending {
		s.discardQueued = false
		if s.state == stateClosed || !s.shutWr {
			continue
		}
		if l.discardInput(s) && s.state != stateClosed {
			l.queueDiscard(s)
		}
	}
}

// drained reports whether the drain stop is over: no connection has echoes
// left to write or is waiting for its client's EOF.
func (r *Reactor) drained() bool {
	return r.outPending.Load() <= 0 && r.drainOpen.Load() <= 0
}
