//go:build linux

package reactors

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/uring"
	"github.com/reactorlab/reactorlab/reactors/slots"
)

// The completion path (Layout.Completion): a loop that serves its
// connections and listeners through an io_uring of its own instead of its
// epoll set. What every design shares stays one implementation: a
// completion hands its bytes to the same turn (frames parsed under the
// same budgets, the same out-queue and ledger), and the loop's own
// descriptors (the ingress eventfd, the timerfd) stay in its epoll set,
// which the ring watches with a multishot poll, so ingress, timers and STOP
// reach it as they reach an epoll loop. Where the paths differ:
//
//   - Waiting: the loop blocks in io_uring_enter (Ring.Wait), which also
//     submits what the round queued; when the epoll poll completes, the
//     round drains the epoll set without blocking (pollNow) and
//     dispatches it as an epoll loop does.
//   - Accepting: a multishot accept per listener, asking for non-blocking
//     descriptors (the drain stop and a closing REJECT write directly).
//     EMFILE ends it; the loop sheds as an epoll loop does (accept) and
//     arms it again, or the accept-pause timer does.
//   - Reading: a multishot recv per connection into the loop's provided
//     buffer ring. Each completion's bytes are copied to the connection's
//     input buffer and the buffer goes back to the ring at once; once the
//     batch is reaped the design serves each connection that received,
//     once (LoopPolicy.OnEvent), as an epoll batch reports it once. ENOBUFS (no buffer
//     free) is not end of stream: the bytes wait in the socket, and the
//     receive waits in the loop's starved queue, in the order it starved,
//     for buffers it can use. A round's end arms again, oldest first, at
//     most as many starved receives as the round gave buffers back to the
//     ring (Counters.RingBuffersReturned), and one when it gave none, so
//     that while the queue holds a receive one is in flight to wake the
//     loop; the rest keep their place (Counters.EnobufsRearms, rearmStarved).
//     A receive armed into an empty ring ends with ENOBUFS again at once:
//     arming every starved receive each round would cost a loop of 1,000
//     connections and 16 buffers ~20 completions and re-arms a frame
//     (docs/PERFORMANCE.md). The receive is armed only
//     while the connection is reading and its input buffer does not hold
//     a budget's worth of unparsed bytes with a whole frame among them: above
//     the out-queue's high watermark, or once the loop quiesces, it is
//     cancelled, and armed again below the low one.
//   - Writing: one send in flight per connection, of a copy of its
//     out-queue's pending bytes (the out-queue may compact under a send
//     the kernel still reads); its completion consumes what was sent and
//     sends the rest.
//   - Identity: an operation's user_data is its connection's (slot,
//     generation) and the operation's kind, never a descriptor number, so
//     the completion of an operation on a closed connection is stale. A
//     closed connection's operations in flight are cancelled, and its
//     descriptor is closed only once the last of them has completed
//     (ringClosing): until then the number cannot be reused.
//   - Overflow: completions the completion queue had no room for wait in
//     the kernel's list; Ring.Reap flushes and handles them
//     (Counters.CQOverflowFlushes), and a multishot operation the kernel
//     ended there is armed again like any other.
//
// The ring is created, used and closed on the loop's locked thread
// (SINGLE_ISSUER), in run.

// ringOp is the kind of a ring operation, in the low byte of its user_data.
type ringOp uint8

const (
	ringPollEpoll ringOp = iota + 1 // the multishot poll on the loop's epoll fd
	ringAccept                      // a listener's multishot accept
	ringRecv                        // a connection's multishot recv
	ringSend                        // a connection's send
	ringCancel                      // a cancel the loop submitted
)

// ringUserData is ref's operation op: the slot in the top 24 bits (MaxConns
// is at most 1<<24), the generation in the next 32, op in the low 8. The
// value stays below uring.ReservedUserData.
func ringUserData(ref slots.Ref, op ringOp) uint64 {
	return uint64(ref.Slot())<<40 | uint64(ref.Gen())<<8 | uint64(op)
}

// ringRef is the (slot, generation) of user_data ud.
func ringRef(ud uint64) slots.Ref { return slots.MakeRef(uint32(ud>>40), uint32(ud>>8)) }

// connUserData is the user_data of connection s's operation op: its Ref's,
// or, under the RingCloseNoCancel mutant, its descriptor number's.
func (l *Loop) connUserData(s *Source, op ringOp) uint64 {
	if l.cfg.Faults.RingCloseNoCancel {
		return uint64(s.fd)<<8 | uint64(op) // the mutant: routed by descriptor
	}
	return ringUserData(s.ref, op)
}

// connOf is the connection a completion of a connection's operation
// belongs to: the live source of its Ref, or the closed one whose
// operations are still in flight (ringClosing); nil when neither.
func (l *Loop) connOf(ud uint64) *Source {
	if l.cfg.Faults.RingCloseNoCancel {
		// The mutant: whoever holds that descriptor number now.
		if fd := int(ud >> 8); fd < len(l.fdIndex) {
			if s, ok := l.table.Get(l.fdIndex[fd]); ok && s.kind == kindConn {
				return s
			}
		}
		return nil
	}
	ref := ringRef(ud)
	if s, ok := l.table.Get(ref); ok && s.kind == kindConn {
		return s
	}
	return l.ringClosing[ref]
}

var (
	probeOnce sync.Once
	probeErr  error
)

// ErrNoCompletion marks ProbeCompletion's refusal: this process may not use
// io_uring here, so a completion design cannot run (tests skip on it).
var ErrNoCompletion = errors.New("io_uring unavailable")

// ProbeCompletion reports whether this process may run a completion
// layout: a ring with a provided buffer ring, created and closed once on
// a throwaway locked thread. The error is internal/uring's, with the errno
// (ENOSYS: no io_uring; EPERM: kernel.io_uring_disabled or a seccomp
// policy) and a hint; New refuses a completion design with it, and tests
// skip with it.
func ProbeCompletion() error {
	probeOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // never unlocked: the thread is discarded
			r, err := uring.New(uring.Config{Entries: 4})
			if err != nil {
				probeErr = fmt.Errorf("%w: %w", ErrNoCompletion, err)
				return
			}
			if _, err := r.NewBufRing(0, 1, 4096); err != nil {
				probeErr = fmt.Errorf("%w: %w", ErrNoCompletion, err)
			}
			if err := r.Close(); err != nil && probeErr == nil {
				probeErr = fmt.Errorf("%w: %w", ErrNoCompletion, err)
			}
		}()
		<-done
	})
	return probeErr
}

// openRing creates the loop's ring and buffer ring on its thread, arms the
// poll on its epoll fd and an accept on each of its listeners.
func (l *Loop) openRing() error {
	rc := uring.Config{Entries: uint32(l.cfg.Ring.Entries), CQEntries: uint32(l.cfg.Ring.CQ)}
	if l.cfg.Faults.RingOverflowIgnored {
		rc = uring.Config{Entries: 16, CQEntries: 16} // the mutant's small CQ
	}
	ring, err := uring.New(rc)
	if err != nil {
		return fmt.Errorf("loop %d: io_uring: %w", l.id, err)
	}
	l.ring = ring
	if l.bufRing, err = ring.NewBufRing(0, l.cfg.Ring.Buffers, l.cfg.Ring.BufferSize); err != nil {
		return fmt.Errorf("loop %d: io_uring buffer ring: %w", l.id, err)
	}
	l.ringClosing = map[slots.Ref]*Source{}
	if err := l.armEpollPoll(); err != nil {
		return err
	}
	for _, ref := range l.listeners {
		if s, ok := l.table.Get(ref); ok {
			if err := l.armAccept(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeRing ends the ring on the loop's thread: every operation in flight
// is cancelled (Ring.Close), then the descriptors of closed connections
// that waited for theirs are closed. The live connections' descriptors
// are closed with the loop's other resources.
func (l *Loop) closeRing() {
	if l.ring == nil {
		return
	}
	if err := l.ring.Close(); err != nil {
		l.r.fail(fmt.Errorf("loop %d: closing its io_uring: %w", l.id, err))
	}
	l.publishRingStats()
	for ref, s := range l.ringClosing {
		if s.ringFd >= 0 {
			unix.Close(s.ringFd)
			s.ringFd = -1
		}
		delete(l.ringClosing, ref)
	}
	l.ring, l.bufRing = nil, nil
}

// publishRingStats copies the ring's own counters into the loop's.
func (l *Loop) publishRingStats() {
	rs := l.ring.Stats()
	l.stats.RingEnters = rs.Enters
	l.stats.CQOverflowFlushes = rs.OverflowFlushes
}

func (l *Loop) armEpollPoll() error {
	if _, err := l.ring.PollMultishot(l.epfd, unix.POLLIN, ringUserData(0, ringPollEpoll)); err != nil {
		return fmt.Errorf("loop %d: arming the poll of its epoll fd: %w", l.id, err)
	}
	return nil
}

// armAccept arms listener ls's multishot accept, asking for non-blocking,
// close-on-exec descriptors.
func (l *Loop) armAccept(ls *Source) error {
	sqe, err := l.ring.AcceptMultishot(ls.fd, ringUserData(ls.ref, ringAccept))
	if err != nil {
		return fmt.Errorf("loop %d: arming the accept of listener fd %d: %w", l.id, ls.fd, err)
	}
	sqe.OpFlags |= unix.SOCK_NONBLOCK
	ls.recvArmed = true
	return nil
}

// cancelOp submits the cancel of the operation with user_data ud.
func (l *Loop) cancelOp(ud uint64) {
	if _, err := l.ring.CancelUserData(ud, ud&^0xff|uint64(ringCancel)); err != nil {
		l.r.fail(fmt.Errorf("loop %d: cancelling an operation: %w", l.id, err))
	}
}

// waitRing is wait's completion path: submit what the round queued and
// collect completions, blocking (timeout -1: until one; > 0: at most that
// many ms) or not (0). The completions are handled by reapRing.
func (l *Loop) waitRing(timeout int, now int64) error {
	if timeout == 0 || l.ring.Ready() > 0 {
		l.stats.ZeroTimeoutWaits++
		_, err := l.ring.Submit()
		return err
	}
	if now == 0 {
		now = nanotime()
	}
	l.noteBusy(now)
	l.publishRingStats()
	l.publish(now, true)
	l.yieldToScheduler(now)
	l.stats.BlockingWaits++
	if l.rtHold > 0 {
		l.noteHold(now)
	}
	l.busySince = 0
	d := time.Duration(-1)
	if timeout > 0 {
		d = time.Duration(timeout) * time.Millisecond
	}
	_, err := l.ring.Wait(1, d)
	return err
}

// reapRing handles every completion ready, then, when the epoll poll
// fired, drains the epoll set into l.evs without blocking and returns how
// many events it holds for dispatch; receives that ended with ENOBUFS are
// armed again last, as many as the round's buffers back allow
// (rearmStarved).
func (l *Loop) reapRing() int {
	_, err := l.ring.Reap(func(c uring.CQE) {
		if l.cfg.Faults.RingOverflowIgnored && l.ring.Stats().OverflowFlushes != l.ringFlushesHandled {
			// The mutant: a completion reaped after the kernel's overflow
			// list was flushed (by the wait's enter or by Reap) is lost,
			// whether or not the loop looked at the flag in time.
			l.stats.CompletionsLost++
			return
		}
		l.stats.Completions++
		l.onCompletion(c)
	})
	if l.cfg.Faults.RingOverflowIgnored {
		l.ringFlushesHandled = l.ring.Stats().OverflowFlushes
	}
	if err != nil {
		l.r.fail(fmt.Errorf("loop %d: reaping completions: %w", l.id, err))
	}
	l.serveReceived()
	l.rearmStarved()
	if !l.epollReady {
		return 0
	}
	l.epollReady = false
	l.stats.EpollWaits++
	l.stats.ZeroTimeoutWaits++
	n, e := pollNow(l.epfd, l.evs)
	if e != 0 {
		l.r.fail(fmt.Errorf("loop %d: epoll_wait: %w", l.id, e))
		return 0
	}
	if n == len(l.evs) {
		l.epollReady = true // more may be ready: no new wakeup would say so
	}
	return n
}

// onCompletion routes one completion by the kind in its user_data.
func (l *Loop) onCompletion(c uring.CQE) {
	l.progress++
	switch ringOp(c.UserData & 0xff) {
	case ringPollEpoll:
		l.epollReady = true
		if !c.More() && l.ring != nil {
			if err := l.armEpollPoll(); err != nil {
				l.r.fail(err)
			}
		}
	case ringAccept:
		l.onAcceptCompletion(c)
	case ringRecv:
		l.onRecvCompletion(c)
	case ringSend:
		l.onSendCompletion(c)
	case ringCancel:
		// Its target's own completion says what became of it.
	}
}

// onAcceptCompletion registers the connection a listener's accept
// completed with, or sheds at EMFILE, and arms the accept again when the
// kernel ended it.
func (l *Loop) onAcceptCompletion(c uring.CQE) {
	ls, ok := l.table.Get(ringRef(c.UserData))
	live := ok && ls.kind == kindListener && ls.fd >= 0
	if live && !c.More() {
		ls.recvArmed = false
	}
	switch e := c.Err(); {
	case e == nil:
		fd := int(c.Res)
		l.stats.AcceptWakeups++
		if !live || l.stopSeen || l.r.stopRequested.Load() {
			unix.Close(fd) // admission is closed: its listener is gone or going
			l.stats.ConnsRefused++
			return
		}
		l.stats.Accepts++
		if l.isAcceptor() && !ls.control {
			l.handOff(fd, nanotime())
		} else {
			l.addConn(fd, ls.control)
		}
	case !live || errors.Is(e, unix.ECANCELED):
		return
	case errors.Is(e, unix.EMFILE) || errors.Is(e, unix.ENFILE):
		// The ring's accept takes a descriptor before it looks for a
		// connection, so armed again at once it would fail at once, again
		// and again, while the table is full. accept sheds what waits as
		// an epoll loop does (the reserve descriptor; without it, a pause),
		// through accept4 on the non-blocking listener; then the accept
		// rests for the accept pause, whose timer arms it again.
		l.accept(ls)
		if !ls.acceptPaused && ls.fd >= 0 {
			ls.acceptPaused = true
			l.stats.AcceptPauses++
			l.scheduleTimer(timerAcceptPause, nanotime()+10e6, uint64(ls.ref))
		}
	default:
		l.stats.AcceptErrors++
	}
	if live && !ls.recvArmed && !ls.acceptPaused && ls.fd >= 0 {
		if err := l.armAccept(ls); err != nil {
			l.r.fail(err)
		}
	}
}

// rearmStarved is the round's end for the receives that ended with
// ENOBUFS, waiting in l.recvStarved[l.starvedHead:] in the order they
// starved: it arms again, from the oldest, at most max(1, b) of them, b
// being the buffers the round gave back to the ring. One a round when
// none came back keeps the loop live: while the queue is not empty a
// receive it armed is in flight, and its completion (bytes, ENOBUFS, an
// error) wakes the loop for the next round. A waiting receive that no
// longer wants arming (its connection closed, paused above the high
// watermark, quiesced) leaves the queue without taking a turn;
// updateInterest arms it when it wants again.
func (l *Loop) rearmStarved() {
	allowed := max(l.roundBuffers, 1)
	l.roundBuffers = 0
	for armed := 0; armed < allowed && l.starvedHead < len(l.recvStarved); {
		s := l.recvStarved[l.starvedHead]
		l.recvStarved[l.starvedHead] = nil
		l.starvedHead++
		s.starved = false
		if l.Live(s) && !s.recvArmed && l.wantRecv(s) {
			l.stats.EnobufsRearms++
			l.armRecv(s)
			armed++
		}
	}
	switch waiting := len(l.recvStarved) - l.starvedHead; {
	case waiting == 0:
		l.recvStarved, l.starvedHead = l.recvStarved[:0], 0
	case l.starvedHead >= waiting: // the spent head is the larger part: reclaim it
		n := copy(l.recvStarved, l.recvStarved[l.starvedHead:])
		clear(l.recvStarved[n:])
		l.recvStarved, l.starvedHead = l.recvStarved[:n], 0
	}
}

// onRecvCompletion takes a receive's bytes into its connection's input
// buffer (its provided buffer goes back at once) and lets the design serve
// it; EOF, ENOBUFS, a cancel and an error each end the receive their own
// way.
func (l *Loop) onRecvCompletion(c uring.CQE) {
	var data []byte
	bid, hasBuf := c.BufferID()
	if hasBuf {
		data = l.bufRing.Bytes(bid, int(c.Res))
		defer l.bufRing.Recycle(bid) // after data is copied
		l.roundBuffers++
		l.stats.RingBuffersReturned++
	}
	s := l.connOf(c.UserData)
	if s == nil {
		l.stats.StaleEvents++
		return
	}
	if !c.More() {
		s.recvArmed, s.recvCancelled = false, false
		l.ringOpDone(s)
	}
	if s.state == stateClosed {
		return // closed with the receive in flight: what it read is dropped
	}
	l.stats.EventsIn++
	switch e := c.Err(); {
	case e == nil && c.Res > 0:
		if s.shutWr {
			break // drain stop: read only to discard until the client's EOF
		}
		if s.in == nil {
			l.getBuf(s)
		} else if cap(s.in)-len(s.in) < len(data) {
			compactIn(s)
		}
		s.in = append(s.in, data...)
		l.stats.BytesIn += uint64(len(data))
		if s.acceptedAt != 0 { // handed over: the first read ends the handoff
			l.hist.record(l.hist.firstRead, nanotime()-s.acceptedAt)
			s.acceptedAt = 0
		}
	case e == nil: // res 0: the peer's end of stream
		if s.shutWr {
			l.closeSource(s)
			return
		}
		s.eofPending = true
	case errors.Is(e, unix.ENOBUFS):
		l.stats.RecvEnobufs++
		if l.cfg.Faults.RingEnobufsEOF {
			s.eofPending = true // the mutant: no buffer taken for no more data
			break
		}
		if !s.starved { // waits its turn for buffers (rearmStarved)
			s.starved = true
			l.recvStarved = append(l.recvStarved, s)
		}
		return
	case errors.Is(e, unix.ECANCELED):
		// Paused or quiesced meanwhile: the batch's end arms it again if wanted.
	default: // ECONNRESET and the like
		l.closeSource(s)
		return
	}
	if !s.received {
		s.received = true
		l.received = append(l.received, s)
	}
}

// serveReceived is the batch's end for the connections whose receives
// completed in it: each is handed to the design once (LoopPolicy.OnEvent),
// as an epoll batch reports a ready source once however many segments
// arrived, so a round gives a source one turn from its batch whatever
// number of buffers its bytes came in; then its receive is armed again or
// cancelled as it now wants (updateInterest).
func (l *Loop) serveReceived() {
	for i, s := range l.received {
		l.received[i] = nil
		s.received = false
		if !l.Live(s) {
			continue
		}
		if s.state == stateReading {
			l.policy.OnEvent(s, true)
		}
		if l.Live(s) && !s.starved {
			l.updateInterest(s)
		}
	}
	l.received = l.received[:0]
}

// onSendCompletion consumes what a send wrote and sends the rest.
func (l *Loop) onSendCompletion(c uring.CQE) {
	s := l.connOf(c.UserData)
	if s == nil {
		l.stats.StaleEvents++
		return
	}
	if !s.sending {
		return // the mutant routed another connection's send here
	}
	s.sending = false
	l.ringOpDone(s)
	if s.state == stateClosed {
		return
	}
	if e := c.Err(); e != nil {
		l.closeSource(s) // EPIPE, ECONNRESET, ECANCELED by a close
		return
	}
	l.stats.EventsOut++
	s.out.Consume(int(c.Res))
	l.stats.BytesOut += uint64(c.Res)
	if len(s.sendBuf) == int(c.Res) || s.out.Empty() {
		l.putSendBuf(s)
	}
	l.flush(s)
}

// ringOpDone ends one operation of s; a closed connection's descriptor is
// closed with its last one.
func (l *Loop) ringOpDone(s *Source) {
	if s.ringOps > 0 {
		s.ringOps--
	}
	if s.ringOps == 0 && s.state == stateClosed && s.ringFd >= 0 {
		unix.Close(s.ringFd)
		s.ringFd = -1
		delete(l.ringClosing, s.ref)
	}
}

// wantRecv reports whether s's receive should be armed: it is reading and
// the loop has not quiesced (or it is shut for writing and read only to
// discard), and its input buffer does not already hold a turn's bytes with
// a whole frame among them (bytes arrive by completion whatever the
// budgets, so this bounds what a connection buffers unparsed).
func (l *Loop) wantRecv(s *Source) bool {
	if s.shutWr {
		return true
	}
	if s.state != stateReading || l.quiesced || s.eofPending {
		return false
	}
	return len(s.in)-s.r < l.cfg.Budgets.Bytes || !l.hasFrame(s)
}

// ringInterest is updateInterest's completion path: the receive armed or
// cancelled as wantRecv says, and a send started if bytes wait and none is
// in flight.
func (l *Loop) ringInterest(s *Source) {
	if l.ring == nil || s.state == stateClosed {
		return
	}
	want := l.wantRecv(s)
	switch {
	case want && !s.recvArmed && !s.starved:
		l.armRecv(s)
	case !want && s.recvArmed && !s.recvCancelled:
		s.recvCancelled = true
		l.cancelOp(l.connUserData(s, ringRecv))
	}
	if !s.out.Empty() && !s.sending {
		l.startSend(s)
	}
}

// armRecv arms s's multishot receive into the loop's buffer ring.
func (l *Loop) armRecv(s *Source) {
	if _, err := l.ring.RecvMultishot(s.fd, l.bufRing, l.connUserData(s, ringRecv)); err != nil {
		l.r.fail(fmt.Errorf("loop %d: arming a receive: %w", l.id, err))
		return
	}
	s.recvArmed = true
	s.ringOps++
}

// startSend sends a copy of s's pending out-queue bytes.
func (l *Loop) startSend(s *Source) {
	p := s.out.Pending()
	if cap(s.sendBuf) < len(p) {
		s.sendBuf = l.getSendBuf(len(p))
	}
	s.sendBuf = append(s.sendBuf[:0], p...)
	if _, err := l.ring.Send(s.fd, s.sendBuf, l.connUserData(s, ringSend)); err != nil {
		l.r.fail(fmt.Errorf("loop %d: submitting a send: %w", l.id, err))
		return
	}
	s.sending = true
	s.ringOps++
}

// getSendBuf returns an empty send buffer of capacity at least n, from the
// loop's free list when one is large enough.
func (l *Loop) getSendBuf(n int) []byte {
	for i := len(l.sendBufs) - 1; i >= 0; i-- {
		if b := l.sendBufs[i]; cap(b) >= n {
			last := len(l.sendBufs) - 1
			l.sendBufs[i] = l.sendBufs[last]
			l.sendBufs = l.sendBufs[:last]
			return b[:0]
		}
	}
	return make([]byte, 0, max(n, maxLentOut))
}

// putSendBuf takes back s's send buffer once no send of it is in flight.
func (l *Loop) putSendBuf(s *Source) {
	if s.sending || s.sendBuf == nil {
		return
	}
	if cap(s.sendBuf) <= maxLentIn && len(l.sendBufs) < 64 {
		l.sendBufs = append(l.sendBufs, s.sendBuf[:0])
	}
	s.sendBuf = nil
}

// ringClose is closeSource's completion path for s's descriptor: closed at
// once when none of its operations is in flight; otherwise each is
// cancelled and the descriptor is closed with the last completion
// (ringOpDone). The RingCloseNoCancel mutant closes it at once and cancels
// nothing.
func (l *Loop) ringClose(s *Source) {
	if s.ringOps == 0 || l.cfg.Faults.RingCloseNoCancel {
		unix.Close(s.fd)
		return
	}
	if s.recvArmed && !s.recvCancelled {
		s.recvCancelled = true
		l.cancelOp(l.connUserData(s, ringRecv))
	}
	if s.sending {
		l.cancelOp(l.connUserData(s, ringSend))
	}
	s.ringFd = s.fd
	l.ringClosing[s.ref] = s
}

// closeRingListener is closeListeners' completion path. The ring's accept
// holds the socket open until its cancel has completed, so closing the
// descriptor alone would leave it listening meanwhile: shutdown stops it
// listening at once (a connection then gets an RST), the accept is
// cancelled, and the descriptor closed. What the accept completes with
// meanwhile is closed, the listener's Ref being stale by then.
func (l *Loop) closeRingListener(ls *Source) {
	_ = unix.Shutdown(ls.fd, unix.SHUT_RDWR)
	if l.ring != nil && ls.recvArmed {
		l.cancelOp(ringUserData(ls.ref, ringAccept))
	}
	unix.Close(ls.fd)
}
