//go:build linux

package reactors

import (
	"math"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/readyq"
	"github.com/reactorlab/reactorlab/wire"
)

// turn is one source's turn: serve buffered and newly read frames under the
// budgets, then flush its out-queue once. It reports whether s went back on
// q with work left, as the design's Requeue decides for a source still
// reading.
func (l *Loop) turn(s *Source, q *readyq.Queue) bool {
	if s.kind != kindConn || s.state == stateClosed || s.state == stateHeld {
		return false
	}
	l.progress++
	more, buffered := l.serveInput(s)
	if l.cfg.Faults.DropPartial && s.in != nil && s.state != stateClosed && !l.hasFrame(s) {
		// The mutant: it assumes every read carries whole frames, so the
		// start of a frame whose rest has not arrived yet is thrown away.
		s.in, s.r = s.in[:0], 0
	}
	if !l.flush(s) {
		return false
	}
	if s.in != nil && s.r == len(s.in) {
		l.putBuf(s)
	}
	if s.state == stateReading && l.policy.Requeue(more, buffered) {
		l.stats.Requeues++
		l.enqueue(q, s, 0)
		return true
	}
	return false
}

// serveInput parses complete frames already buffered, then reads more, until
// EAGAIN, EOF, backpressure or a budget (frames, bytes, time) is spent.
// more: a budget ended the turn with input possibly left; buffered: complete
// frames remain in s.in.
func (l *Loop) serveInput(s *Source) (more, buffered bool) {
	if s.state != stateReading || l.quiesced {
		return false, false
	}
	// Every echo, PING answer and REJECT of the turn is queued on this
	// buffer; the flush that ends the turn takes it back once drained.
	l.lendOut(s)
	b := &l.cfg.Budgets
	noBudget := l.cfg.Faults.NoBudget
	maxFrame := l.cfg.MaxFrame
	if l.cfg.Faults.NoFrameLimit {
		maxFrame = math.MaxInt32 // the mutant trusts whatever the header says
	}
	if l.cfg.Faults.FrameLimitOffByOne {
		maxFrame-- // the mutant: refuses size >= MaxFrame, where only > is over
	}
	if s.in == nil {
		l.getBuf(s)
	}
	frames, bytes, reads := 0, 0, 0
	drained := false // a short read emptied the socket
	var start int64
	if b.Time > 0 && !noBudget {
		start = nanotime()
	}
	for {
		for {
			avail := s.in[s.r:]
			if len(avail) < wire.HeaderSize {
				break
			}
			h, err := wire.ParseHeader(avail, maxFrame)
			if err != nil {
				l.protocolError(s, h, err)
				return false, false
			}
			size := h.FrameSize()
			if len(avail) < size {
				if cap(s.in) < size {
					l.growIn(s, size) // else compaction below makes room
				}
				break
			}
			if !l.handle(s, h, avail[:size]) {
				return false, false // closed, or waiting for the pool (frame kept)
			}
			s.r += size
			frames++
			if s.state == stateHeld {
				// ONESHOT: held unarmed until STOP_ACK. Frames that came in
				// the same read behind the STOP are answered now (DATA with
				// REJECT: admission is closed), as the other designs do by
				// reading on; nothing more is read.
				l.answerBuffered(s, maxFrame)
				return false, false
			}
			if s.out.Paused() {
				// The flush at the end of the turn may drain the queue below
				// the low watermark at once: then nothing else would bring
				// this source back (ET: no new edge), so report work left.
				return true, l.hasFrame(s)
			}
			if noBudget {
				continue
			}
			if frames >= b.Input {
				l.stats.InputBudgetHits++
				return true, l.hasFrame(s)
			}
			if (start != 0 || l.deadline != 0) && frames%b.ClockEvery == 0 {
				// One clock read serves both bounds: this turn's, and the
				// consume pass's (Loop.SetDeadline).
				now := nanotime()
				if start != 0 && now-start > int64(b.Time) || l.deadline != 0 && now > l.deadline {
					l.stats.TimeBudgetHits++
					return true, l.hasFrame(s)
				}
			}
		}
		if s.r == len(s.in) {
			s.in, s.r = s.in[:0], 0
		} else if s.r > 0 {
			n := copy(s.in, s.in[s.r:])
			s.in, s.r = s.in[:n], 0
		}
		if !noBudget && bytes >= b.Bytes {
			l.stats.ByteBudgetHits++
			return true, false
		}
		if l.maxReads > 0 && reads >= l.maxReads {
			return false, false // the NoDrain mutant's one read per edge
		}
		if drained && !s.rdhup {
			// A stream socket that returned less than asked is empty now;
			// data arriving later raises a new event (a new edge under ET),
			// so the read that would return EAGAIN is saved. A FIN queued
			// behind the data raised its edge before this read (EPOLLRDHUP
			// said so): then read on to the 0.
			return false, false
		}
		room := s.in[len(s.in):cap(s.in)]
		if !noBudget && len(room) > b.Bytes-bytes {
			room = room[:b.Bytes-bytes]
		}
		n, e := rawRead(s.fd, room)
		reads++
		switch {
		case e == unix.EAGAIN:
			return false, false
		case e != 0:
			l.closeSource(s)
			return false, false
		case n == 0:
			if l.cfg.Faults.FreeAtEOF {
				// The mutant: the peer is done sending, so the connection is
				// freed at once, before the flush that ends the turn: echoes
				// still queued (this turn's included) are dropped.
				l.closeSource(s)
				return false, false
			}
			l.setState(s, stateClosing)
			if l.cfg.Faults.FlushSpinAtEOF && !s.out.Empty() {
				l.spinFlush(s) // the mutant: may close s
			}
			return false, false
		}
		drained = n < len(room)
		s.in = s.in[:len(s.in)+n]
		bytes += n
		l.stats.BytesIn += uint64(n)
	}
}

// hasFrame reports whether a complete frame is buffered.
func (l *Loop) hasFrame(s *Source) bool {
	avail := s.in[s.r:]
	if len(avail) < wire.HeaderSize {
		return false
	}
	h, err := wire.ParseHeader(avail, math.MaxInt32)
	return err != nil || len(avail) >= h.FrameSize()
}

// answerBuffered handles the complete frames left in s's input buffer
// without reading more (ONESHOT, behind a STOP).
func (l *Loop) answerBuffered(s *Source, maxFrame int) {
	for s.state != stateClosed && len(s.in)-s.r >= wire.HeaderSize {
		avail := s.in[s.r:]
		h, err := wire.ParseHeader(avail, maxFrame)
		if err != nil {
			l.protocolError(s, h, err)
			return
		}
		if len(avail) < h.FrameSize() {
			return
		}
		if !l.handle(s, h, avail[:h.FrameSize()]) {
			return
		}
		s.r += h.FrameSize()
	}
}

// admissionClosed reports whether DATA must be refused: from the moment a
// stop is requested, even mid-turn. The StopWhenIdle mutant keeps
// admission open until its loop observes the stop (which it does only when
// idle).
func (l *Loop) admissionClosed() bool {
	if l.cfg.Faults.StopWhenIdle {
		return l.stopSeen
	}
	return l.stopSeen || l.r.stopRequested.Load()
}

// handle acts on one complete frame. It returns false when the frame was not
// consumed or the turn must end: s closed, held for STOP, or the worker pool
// is full (the frame stays buffered and the source waits).
func (l *Loop) handle(s *Source, h wire.Header, frame []byte) bool {
	switch h.Kind {
	case wire.KindData:
		// Admission closes when the stop is requested, even mid-turn: a
		// DATA frame behind the STOP in the same read is refused too.
		if l.admissionClosed() {
			if l.cfg.Faults.SilentAfterStop {
				return true // the mutant: dropped unanswered and uncounted
			}
			l.stats.FramesIn++
			l.ledger.Accepted++
			l.ledger.Rejected++
			return l.reject(s, h, "stopping: admission closed")
		}
		if l.r.pool != nil {
			if !l.offload(s, frame) {
				l.setState(s, statePoolWait)
				l.blocked = append(l.blocked, s.ref)
				l.stats.PoolFullPauses++
				l.updateInterest(s)
				return false
			}
			l.stats.FramesIn++
			l.ledger.Accepted++
			return true
		}
		l.stats.FramesIn++
		l.ledger.Accepted++
		if !l.r.dist.IsZero() {
			cost.Spin(l.sampler.Sample())
		}
		if err := s.out.Append(frame); err != nil {
			l.ledger.Rejected++
			l.ledger.Abandoned++
			l.stats.HardCapClosed++
			l.closeSource(s)
			return false
		}
		l.ledger.Completed++
		l.stats.FramesEchoed++
		return true
	case wire.KindPing:
		if err := s.out.Append(frame); err != nil {
			l.stats.HardCapClosed++
			l.closeSource(s)
			return false
		}
		l.stats.PingsEchoed++
		return true
	case wire.KindStop:
		if !s.control {
			return l.reject(s, h, "STOP is accepted on control connections only")
		}
		return l.onStopFrame(s, h)
	default:
		l.stats.MalformedClosed++
		l.reject(s, h, "unexpected frame kind from a client: "+h.Kind.String())
		l.flushAndClose(s)
		return false
	}
}

// reject queues a REJECT answering h with reason.
func (l *Loop) reject(s *Source, h wire.Header, reason string) bool {
	b := s.out.Reserve(wire.HeaderSize + len(reason))
	if b == nil {
		l.stats.HardCapClosed++
		l.closeSource(s)
		return false
	}
	wire.PutHeader(b, wire.Header{Length: uint32(wire.HeaderSize - 4 + len(reason)), Kind: wire.KindReject,
		Token: h.Token, Seq: h.Seq, SendNs: h.SendNs})
	copy(b[wire.HeaderSize:], reason)
	l.stats.RejectsSent++
	return true
}

// protocolError answers a bad header (over-size, malformed) with a REJECT
// and closes the connection; other connections go on. Nothing of the
// declared size was allocated.
func (l *Loop) protocolError(s *Source, h wire.Header, err error) {
	reason := "malformed frame header"
	if isTooLarge(err) {
		l.stats.OverSizeClosed++
		reason = "frame exceeds the maximum size"
	} else {
		l.stats.MalformedClosed++
	}
	l.reject(s, h, reason)
	l.flushAndClose(s)
}
