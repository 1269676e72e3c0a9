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
	// A completion's end of stream waits for the frames before it: a turn
	// cut by a budget comes back for it (no new completion would).
	buffered = buffered || s.eofPending
	if s.state == stateReading && l.policy.Requeue(more, buffered) {
		l.stats.Requeues++
		l.enqueue(q, s, 0)
		return true
	}
	return false
}

// turnSpent is what one turn has used of its budgets so far.
type turnSpent struct {
	frames, bytes, reads int
	start                int64 // clock at the turn's start when a time budget is in force, else 0
	maxFrame             int   // the frame limit in force (the mutants move it)
	unbounded            bool  // the NoBudget mutant: no count, byte or time budget
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
	spent := turnSpent{maxFrame: l.frameLimit(), unbounded: l.cfg.Faults.NoBudget}
	if s.in == nil {
		l.getBuf(s)
	}
	if b.Time > 0 && !spent.unbounded {
		spent.start = nanotime()
	}
	drained := false // a short read emptied the socket
	for {
		if ended, more, buffered := l.serveBuffered(s, &spent); ended {
			return more, buffered
		}
		compactIn(s)
		if l.completion {
			// Input arrives by completion (ring_linux.go), never read here;
			// the end of stream, once every frame before it is served.
			if s.eofPending {
				s.eofPending = false
				l.onEOF(s)
			}
			return false, false
		}
		if !spent.unbounded && spent.bytes >= b.Bytes {
			l.stats.ByteBudgetHits++
			return true, false
		}
		if l.maxReads > 0 && spent.reads >= l.maxReads {
			return false, false // the NoDrain mutant's one read per edge
		}
		if drained && !s.rdhup && !l.urgent {
			// A stream socket that returned less than asked is empty now;
			// data arriving later raises a new event (a new edge under EPOLLET),
			// so the read that would return EAGAIN is saved. A FIN queued
			// behind the data raised its edge before this read (EPOLLRDHUP
			// said so): then read on to the 0. With urgent data on, a read
			// also stops short at the urgent mark, with data behind it: read
			// on until the poll before a read reports no in-band data.
			return false, false
		}
		var ok bool
		if drained, ok = l.readMore(s, &spent); !ok {
			return false, false
		}
	}
}

// frameLimit is the largest whole frame accepted: Config.MaxFrame, unless
// a mutant moves it.
func (l *Loop) frameLimit() int {
	switch {
	case l.cfg.Faults.NoFrameLimit:
		return math.MaxInt32 // the mutant trusts whatever the header says
	case l.cfg.Faults.FrameLimitOffByOne:
		return l.cfg.MaxFrame - 1 // the mutant: refuses size >= MaxFrame, where only > is over
	}
	return l.cfg.MaxFrame
}

// serveBuffered handles the complete frames in s's input buffer, under the
// turn's frame and time budgets. ended says the turn is over (then more
// and buffered are serveInput's answer); otherwise every complete frame
// was handled and the turn may read more.
func (l *Loop) serveBuffered(s *Source, spent *turnSpent) (ended, more, buffered bool) {
	b := &l.cfg.Budgets
	for {
		avail := s.in[s.r:]
		if len(avail) < wire.HeaderSize {
			return false, false, false
		}
		h, err := wire.ParseHeader(avail, spent.maxFrame)
		if err != nil {
			l.protocolError(s, h, err)
			return true, false, false
		}
		size := h.FrameSize()
		if len(avail) < size {
			if cap(s.in) < size {
				l.growIn(s, size) // else compaction makes room
			}
			return false, false, false
		}
		if !l.handle(s, h, avail[:size]) {
			return true, false, false // closed, or waiting for the pool (frame kept)
		}
		s.r += size
		spent.frames++
		if s.state == stateHeld {
			// Shared layout: held unarmed until STOP_ACK. Frames that came in
			// the same read behind the STOP are answered now (DATA with
			// REJECT: admission is closed), as a loop of its own would by
			// reading on; nothing more is read.
			l.answerBuffered(s, spent.maxFrame)
			return true, false, false
		}
		if s.out.Paused() {
			// The flush at the end of the turn may drain the queue below
			// the low watermark at once: then nothing else would bring
			// this source back (edge-triggered: no new edge), so report work left.
			return true, true, l.hasFrame(s)
		}
		if spent.unbounded {
			continue
		}
		if spent.frames >= b.Input {
			l.stats.InputBudgetHits++
			return true, true, l.hasFrame(s)
		}
		if (spent.start != 0 || l.deadline != 0) && spent.frames%b.ClockEvery == 0 {
			// One clock read serves both bounds: this turn's, and the
			// consume pass's (Loop.SetDeadline).
			now := nanotime()
			if spent.start != 0 && now-spent.start > int64(b.Time) || l.deadline != 0 && now > l.deadline {
				l.stats.TimeBudgetHits++
				return true, true, l.hasFrame(s)
			}
		}
	}
}

// compactIn moves the unparsed bytes of s's input buffer to its start.
func compactIn(s *Source) {
	if s.r == len(s.in) {
		s.in, s.r = s.in[:0], 0
	} else if s.r > 0 {
		n := copy(s.in, s.in[s.r:])
		s.in, s.r = s.in[:n], 0
	}
}

// readMore reads once into the room left in s's input buffer (at most the
// bytes the turn may still read). ok is false when the turn is over:
// EAGAIN (or, with urgent data on, no in-band data past an urgent mark,
// so no read is made), an error (s closed) or EOF (s closing, or closed by
// the FreeAtEOF mutant). drained says the read returned less than asked:
// the socket is empty now.
func (l *Loop) readMore(s *Source, spent *turnSpent) (drained, ok bool) {
	room := s.in[len(s.in):cap(s.in)]
	if left := l.cfg.Budgets.Bytes - spent.bytes; !spent.unbounded && len(room) > left {
		room = room[:left]
	}
	n, e := -1, unix.EAGAIN
	readable := true
	if l.urgent && !s.control {
		// An in-band read that starts at an unread urgent mark skips the
		// urgent byte and, once past it, the kernel forgets it: recv(MSG_OOB)
		// then says EINVAL. So no read starts unless in-band data stands
		// ahead of any unread mark (urgent_linux.go).
		if readable = l.urgentReadable(s); s.state == stateClosed {
			return false, false
		}
		if readable && l.cfg.beforeInbandRead != nil {
			l.cfg.beforeInbandRead(s.fd)
		}
	}
	if readable {
		n, e = rawRead(s.fd, room)
		spent.reads++
	}
	if s.urgentPastMark && (e == unix.EAGAIN || e == 0 && n < len(room) || atUrgentMark(s.fd)) {
		// The in-band reads have reached the urgent byte's mark: the
		// answer may go (urgent_linux.go). Every read while it waits is
		// followed by this check, so none starts at the mark unnoticed.
		s.urgentPastMark = false
		if !l.sendUrgent(s) {
			return false, false
		}
	}
	switch {
	case e == unix.EAGAIN:
		return false, false
	case e != 0:
		l.closeSource(s)
		return false, false
	case n == 0:
		l.onEOF(s)
		return false, false
	}
	s.in = s.in[:len(s.in)+n]
	spent.bytes += n
	l.stats.BytesIn += uint64(n)
	if s.acceptedAt != 0 { // handed over: the first read ends the handoff
		l.hist.record(l.hist.firstRead, nanotime()-s.acceptedAt)
		s.acceptedAt = 0
	}
	return n < len(room), true
}

// onEOF: the peer has finished sending. s reads no more and closes once
// its out-queue and offloaded work are done (flush).
func (l *Loop) onEOF(s *Source) {
	if l.cfg.Faults.FreeAtEOF {
		// The mutant: the peer is done sending, so the connection is
		// freed at once, before the flush that ends the turn: echoes
		// still queued (this turn's included) are dropped.
		l.closeSource(s)
		return
	}
	l.setState(s, stateClosing)
	if l.cfg.Faults.FlushSpinAtEOF && !s.out.Empty() {
		l.spinFlush(s) // the mutant: may close s
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
// without reading more (a held source, behind its STOP).
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
	closed := l.stopSeen || l.r.stopRequested.Load()
	return closed && !l.r.draining.Load() // a drain stop answers what it read
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
		if l.admit != nil && !l.admitted(s) {
			l.stats.FramesIn++
			l.stats.AdmissionRejects++
			l.ledger.Accepted++
			l.ledger.Rejected++
			return l.reject(s, h, "admission: over the token-bucket rate")
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
