//go:build linux

package reactors

import (
	"math"
	"os"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/outq"
	"github.com/reactorlab/reactorlab/reactors/readyq"
	"github.com/reactorlab/reactorlab/wire"
)

// turn is one source's turn: serve buffered and newly read frames under the
// budgets, then flush its out-queue once. It reports whether s went back on
// q with work left (ET: any budget spent; the level-triggered designs only
// when complete frames remain buffered, since the kernel re-reports unread
// socket data by itself).
func (l *loop) turn(s *source, q *readyq.Queue) bool {
	if s.kind != kindConn || s.fd < 0 || s.stopHeld {
		return false
	}
	l.progress++
	more, buffered := l.serveInput(s)
	if l.cfg.Faults.DropPartial && s.in != nil && s.fd >= 0 && !l.hasFrame(s) {
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
	requeue := buffered
	if l.design == ET {
		requeue = more && !l.cfg.Faults.NoDrain
	}
	if requeue && !s.paused && !s.poolWait && !s.stopHeld {
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
func (l *loop) serveInput(s *source) (more, buffered bool) {
	if s.paused || s.poolWait || s.eof || l.quiesced {
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
			if s.stopHeld {
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
			if (start != 0 || l.bucketEnd != 0) && frames%b.ClockEvery == 0 {
				// One clock read serves both bounds: this turn's, and prio's
				// data bucket's.
				now := nanotime()
				if start != 0 && now-start > int64(b.Time) || l.bucketEnd != 0 && now > l.bucketEnd {
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
		if l.cfg.Faults.NoDrain && l.design == ET && reads > 0 {
			return false, false // the mutant: one read per edge
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
			s.eof = true
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
func (l *loop) hasFrame(s *source) bool {
	avail := s.in[s.r:]
	if len(avail) < wire.HeaderSize {
		return false
	}
	h, err := wire.ParseHeader(avail, math.MaxInt32)
	return err != nil || len(avail) >= h.FrameSize()
}

// answerBuffered handles the complete frames left in s's input buffer
// without reading more (ONESHOT, behind a STOP).
func (l *loop) answerBuffered(s *source, maxFrame int) {
	for s.fd >= 0 && len(s.in)-s.r >= wire.HeaderSize {
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
func (l *loop) admissionClosed() bool {
	if l.cfg.Faults.StopWhenIdle {
		return l.stopSeen
	}
	return l.stopSeen || l.r.stopRequested.Load()
}

// handle acts on one complete frame. It returns false when the frame was not
// consumed or the turn must end: s closed, held for STOP, or the worker pool
// is full (the frame stays buffered and the source waits).
func (l *loop) handle(s *source, h wire.Header, frame []byte) bool {
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
				s.poolWait = true
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
func (l *loop) reject(s *source, h wire.Header, reason string) bool {
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
func (l *loop) protocolError(s *source, h wire.Header, err error) {
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

func (l *loop) flushAndClose(s *source) {
	if s.fd < 0 {
		return
	}
	if !s.out.Empty() {
		n, _, _ := s.out.Flush(s.fd)
		l.stats.BytesOut += uint64(n)
	}
	l.closeSource(s)
}

// flush writes the out-queue and updates epoll interest. It returns false
// if s was closed (write error, or EOF with nothing left to send).
func (l *loop) flush(s *source) bool {
	if s.fd < 0 {
		return false
	}
	if !s.out.Empty() {
		var n int
		var err error
		if l.cfg.Faults.DropShortWrite {
			n, err = l.flushIgnoringCount(s)
		} else {
			n, _, err = s.out.Flush(s.fd)
		}
		l.stats.BytesOut += uint64(n)
		if err != nil {
			l.closeSource(s)
			return false
		}
	}
	if s.eof && s.out.Empty() && s.tasks == 0 {
		l.closeSource(s)
		return false
	}
	l.updateInterest(s)
	l.takeOut(s)
	return true
}

// spinFlush is the FlushSpinAtEOF mutant's flush at EOF (flush, with
// EPOLLOUT, is the correct one): it writes s's out-queue until it is
// empty, retrying at once when the socket would block, so while the peer
// does not read, the loop's thread serves nothing else. It ends when a
// write fails (the peer closed or reset: s is closed) or a stop is
// requested, so the reactor can still be stopped.
func (l *loop) spinFlush(s *source) {
	for !s.out.Empty() && !l.r.stopRequested.Load() {
		n, _, err := s.out.Flush(s.fd)
		l.stats.BytesOut += uint64(n)
		if err != nil {
			l.closeSource(s)
			return
		}
	}
}

// flushIgnoringCount is the DropShortWrite mutant's out-queue flush
// (outq.Queue.Flush is the correct one): it writes until the queue is empty
// or the socket would block, and reports the bytes the kernel took.
func (l *loop) flushIgnoringCount(s *source) (int, error) {
	total := 0
	for !s.out.Empty() {
		p := s.out.Pending()
		n, e := rawWrite(s.fd, p)
		switch {
		case e == unix.EAGAIN:
			return total, nil
		case e != 0:
			return total, os.NewSyscallError("write", e)
		}
		total += n
		// The mutant: write(2)'s count is checked for errors only; the whole
		// offer is consumed, so the unwritten tail of a short write is lost.
		s.out.Consume(len(p))
	}
	return total, nil
}

// wantEvents is the interest s should have now: EPOLLIN unless paused,
// waiting, finished or quiesced; EPOLLOUT only while the out-queue is
// non-empty (the PermanentEPOLLOUT mutant keeps it always).
func (l *loop) wantEvents(s *source) uint32 {
	ev := l.connFlags()
	if !s.paused && !s.poolWait && !s.eof && !l.quiesced {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if !s.out.Empty() || l.cfg.Faults.PermanentEPOLLOUT {
		ev |= unix.EPOLLOUT
	}
	return ev
}

// updateInterest applies the out-queue's watermark state and re-registers s
// if its interest changed (ONESHOT sources are re-registered by rearm).
func (l *loop) updateInterest(s *source) {
	if paused := s.out.Paused(); paused != s.paused {
		s.paused = paused
		if paused {
			l.stats.BackpressureOn++
		} else if s.in != nil && l.hasFrame(s) {
			l.enqueue(l.queueFor(s), s, 0)
		}
	}
	if has := !s.out.Empty(); has != s.hadOut {
		s.hadOut = has
		if has {
			l.r.outPending.Add(1)
		} else {
			l.r.outPending.Add(-1)
		}
	}
	if l.design == OneShot {
		return
	}
	if want := l.wantEvents(s); want != s.interest {
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, s.fd, want, s.ref); err != nil {
			l.closeSource(s)
			return
		}
		s.interest = want
	}
}

func (l *loop) queueFor(s *source) *readyq.Queue {
	if s.control && l.ctlReady != nil {
		return l.ctlReady
	}
	return l.ready
}

// closeSource closes a connection and revokes its identity: later events,
// queued turns and worker results carrying its Ref are stale.
func (l *loop) closeSource(s *source) {
	if s.fd < 0 {
		return
	}
	if l.cfg.Faults.LeakPending && (!s.out.Empty() || s.tasks > 0) {
		// The mutant: a connection that dies with work pending is forgotten
		// instead of closed. It stops being watched, but its fd stays open
		// and its slot allocated (both leak until the reactor exits), and
		// ConnsClosed misses it.
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
		l.ready.Remove(s.ref.Slot())
		if l.ctlReady != nil {
			l.ctlReady.Remove(s.ref.Slot())
		}
		if s.hadOut {
			s.hadOut = false
			l.r.outPending.Add(-1) // nobody will drain it
		}
		return
	}
	unix.Close(s.fd) // also removes it from the epoll set (no dups exist)
	if s.fd < len(l.fdIndex) && l.fdIndex[s.fd] == s.ref {
		l.fdIndex[s.fd] = 0
	}
	s.fd = -1
	l.table.Free(s.ref)
	l.ready.Remove(s.ref.Slot())
	if l.ctlReady != nil {
		l.ctlReady.Remove(s.ref.Slot())
	}
	if s.hadOut {
		s.hadOut = false
		l.r.outPending.Add(-1)
	}
	if s.in != nil {
		l.putBuf(s)
	}
	s.out.Release()
	l.stats.ConnsClosed++
	l.progress++
}

// getBuf lends s a read buffer from the loop's free list: idle connections
// hold none, so their footprint is the source struct and the kernel socket.
func (l *loop) getBuf(s *source) {
	if n := len(l.bufs); n > 0 {
		s.in = l.bufs[n-1][:0]
		l.bufs = l.bufs[:n-1]
	} else {
		s.in = make([]byte, 0, l.bufSize)
	}
	s.r = 0
}

// putBuf takes back s's buffer if it holds no unparsed bytes.
func (l *loop) putBuf(s *source) {
	if s.r != len(s.in) {
		return
	}
	if cap(s.in) == l.bufSize && len(l.bufs) < 64 {
		l.bufs = append(l.bufs, s.in[:0])
	}
	s.in, s.r = nil, 0
}

// lendOut gives s an out-queue buffer from the loop's free list if it has
// none, before something is queued on it.
func (l *loop) lendOut(s *source) {
	if n := len(l.outBufs); n > 0 && s.out.Attach(l.outBufs[n-1]) {
		l.outBufs = l.outBufs[:n-1]
	}
}

// takeOut takes back the buffer of s's out-queue once it has drained
// (saving 512 bytes or more per idle connection: an echoed connection
// otherwise keeps the buffer it grew). Buffers over maxLentOut are left to
// the collector, so one burst does not pin its memory in the pool.
func (l *loop) takeOut(s *source) {
	if b := s.out.Detach(); b != nil && cap(b) <= maxLentOut && len(l.outBufs) < 64 {
		l.outBufs = append(l.outBufs, b)
	}
}

// maxLentOut is the largest out-queue buffer the loop keeps for lending.
const maxLentOut = 64 << 10

// growIn makes room for a frame of size bytes (already checked against the
// frame limit, or trusted by the NoFrameLimit mutant).
func (l *loop) growIn(s *source, size int) {
	buf := make([]byte, len(s.in)-s.r, max(size, l.bufSize))
	copy(buf, s.in[s.r:])
	s.in, s.r = buf, 0
}

// accept takes connections until EAGAIN or the accept budget; EMFILE does
// not become a busy loop (reserve-fd trick, else a timed pause).
func (l *loop) accept(ls *source) {
	paused := false
	budget := l.cfg.Budgets.Accept
	if l.cfg.Faults.AcceptOnceET {
		budget = 1 // the mutant: one accept per edge (see listenerEvents)
	}
	for i := 0; i < budget; i++ {
		fd, e := rawAccept(ls.fd)
		if e == unix.EAGAIN {
			break
		}
		if e == unix.EMFILE || e == unix.ENFILE {
			l.stats.AcceptEMFILE++
			if l.cfg.Faults.NoEMFILEShed {
				// The mutant: give up this turn and nothing else; the
				// listener stays readable, so the loop spins on it.
				break
			}
			var more bool
			more, paused = l.shedOneConnection(ls)
			if !more {
				break
			}
			continue
		}
		switch e {
		case 0:
		case unix.ENOBUFS, unix.ENOMEM:
			l.stats.AcceptErrors++
			i = budget // memory pressure: try again on the next event
			continue
		case unix.EBADF, unix.EINVAL, unix.ENOTSOCK, unix.EOPNOTSUPP, unix.EFAULT:
			l.r.fail(os.NewSyscallError("accept4", e)) // a bug, not a condition
			return
		default: // EPROTO, EPERM, ENETDOWN...: that connection failed, others may not
			l.stats.AcceptErrors++
			continue
		}
		if l.stopSeen || l.r.stopRequested.Load() {
			unix.Close(fd)
			l.stats.ConnsRefused++
			continue
		}
		l.addConn(fd, ls.control)
	}
	if ev := l.listenerEvents(); ev&unix.EPOLLONESHOT != 0 && ls.fd >= 0 && !paused {
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, ls.fd, ev, ls.ref); err != nil {
			l.r.fail(err)
		}
	}
}

// shedOneConnection handles EMFILE: release the reserve descriptor, accept
// the pending connection and close it at once (so the backlog drains and the
// listener stops being readable), then take the reserve back. Without a
// reserve it pauses the listener for 10 ms instead (the accept-pause timer
// re-enables it). It reports whether accepting may continue, and whether
// the listener was paused.
func (l *loop) shedOneConnection(ls *source) (more, paused bool) {
	l.r.reserveMu.Lock()
	if l.r.reserveFd >= 0 {
		unix.Close(l.r.reserveFd)
		l.r.reserveFd = -1
		fd, e := rawAccept(ls.fd)
		if e == 0 {
			unix.Close(fd)
			l.stats.ConnsRefused++
		}
		if rfd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			l.r.reserveFd = rfd
		}
		l.r.reserveMu.Unlock()
		return e == 0, false
	}
	// Lock order is timersMu before reserveMu (the accept-pause timer takes
	// both): release reserveMu before scheduling.
	l.r.reserveMu.Unlock()
	if l.design != OneShot { // ONESHOT: simply not rearmed
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, ls.fd, 0, ls.ref); err != nil {
			l.r.fail(err)
			return false, true
		}
	}
	l.stats.AcceptPauses++
	l.scheduleTimer(timerAcceptPause, nanotime()+10e6, uint64(ls.ref))
	return false, true
}

func (l *loop) addConn(fd int, control bool) {
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	s := &source{fd: fd, kind: kindConn, control: control, loop: l,
		out: outq.New(outq.Limits{High: l.cfg.OutHigh, Low: l.cfg.OutLow, HardCap: l.cfg.OutCap})}
	ref, err := l.table.Alloc(s)
	if err != nil {
		unix.Close(fd)
		l.stats.ConnsRefused++
		return
	}
	s.ref = ref
	interest := l.wantEvents(s)
	s.interest = interest
	s.owned.Store(0) // publish the fields above to whichever worker gets its first event
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, interest, ref); err != nil {
		l.table.Free(ref)
		unix.Close(fd)
		l.stats.ConnsRefused++
		return
	}
	if l.design != OneShot {
		for fd >= len(l.fdIndex) {
			l.fdIndex = append(l.fdIndex, 0)
		}
		l.fdIndex[fd] = ref
	}
	l.stats.ConnsAccepted++
	l.progress++
}
