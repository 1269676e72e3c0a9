//go:build linux

package reactors

import (
	"os"

	"golang.org/x/sys/unix"
)

func (l *Loop) flushAndClose(s *Source) {
	if s.state == stateClosed {
		return
	}
	if !s.out.Empty() && !s.sending { // a send in flight holds the head: nothing may pass it
		n, _, _ := s.out.Flush(s.fd)
		l.stats.BytesOut += uint64(n)
	}
	l.closeSource(s)
}

// flush writes the out-queue and updates epoll interest. It returns false
// if s was closed (write error, or EOF with nothing left to send).
func (l *Loop) flush(s *Source) bool {
	if s.state == stateClosed {
		return false
	}
	if s.urgentPending && !l.sendUrgent(s) {
		return false
	}
	if !s.out.Empty() && !l.completion {
		var n int
		var err error
		switch {
		case l.cfg.Faults.DropShortWrite:
			n, err = l.flushIgnoringCount(s)
		case l.cfg.Faults.BlockOnFullWrite:
			n, err = l.blockingFlush(s)
		default:
			n, _, err = s.out.Flush(s.fd)
		}
		l.stats.BytesOut += uint64(n)
		if err != nil {
			l.closeSource(s)
			return false
		}
	}
	if s.state == stateClosing && s.out.Empty() && s.tasks == 0 {
		l.closeSource(s)
		return false
	}
	if l.quiesced && !l.shutWriteIfDrained(s) && s.state == stateClosed {
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
func (l *Loop) spinFlush(s *Source) {
	for !s.out.Empty() && !l.r.stopRequested.Load() {
		n, _, err := s.out.Flush(s.fd)
		l.stats.BytesOut += uint64(n)
		if err != nil {
			l.closeSource(s)
			return
		}
	}
}

// blockingFlush is the BlockOnFullWrite mutant's flush (outq.Queue.Flush
// and EPOLLOUT are the correct one): it writes s's out-queue and, while the
// socket will not take the rest, waits for it in poll(2) on the loop's
// thread, 100 ms at a time. It ends when the queue is empty, a write fails
// or a stop is requested, so the reactor can still be stopped.
func (l *Loop) blockingFlush(s *Source) (int, error) {
	total := 0
	for {
		n, _, err := s.out.Flush(s.fd)
		total += n
		if err != nil || s.out.Empty() || l.r.stopRequested.Load() {
			return total, err
		}
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}}
		if _, err := unix.Poll(fds, 100); err != nil && err != unix.EINTR {
			return total, os.NewSyscallError("poll", err)
		}
	}
}

// flushIgnoringCount is the DropShortWrite mutant's out-queue flush
// (outq.Queue.Flush is the correct one): it writes until the queue is empty
// or the socket would block, and reports the bytes the kernel took.
func (l *Loop) flushIgnoringCount(s *Source) (int, error) {
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

// wantEvents is the interest s should have now: the design's trigger
// flags; EPOLLIN (and EPOLLRDHUP) only while s is reading and the loop has
// not quiesced; EPOLLOUT only while the out-queue is non-empty or an
// urgent answer waits (the PermanentEPOLLOUT mutant keeps it always);
// EPOLLPRI on a data connection whenever urgent data is on.
func (l *Loop) wantEvents(s *Source) uint32 {
	ev := l.connFlags
	if s.state == stateReading && !l.quiesced || s.shutWr {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if !s.out.Empty() || s.urgentPending || l.cfg.Faults.PermanentEPOLLOUT {
		ev |= unix.EPOLLOUT
	}
	if l.urgent && !s.control {
		ev |= unix.EPOLLPRI
	}
	return ev
}

// updateInterest applies the out-queue's watermark state and re-registers s
// if its interest changed (a one-shot source gets it when the design rearms it).
func (l *Loop) updateInterest(s *Source) {
	switch paused := s.out.Paused(); {
	case paused && s.state == stateReading:
		l.setState(s, statePaused)
		l.stats.BackpressureOn++
	case !paused && s.state == statePaused:
		l.setState(s, stateReading)
		if s.in != nil && l.hasFrame(s) || s.eofPending {
			l.enqueue(l.policy.QueueFor(s), s, 0)
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
	if l.completion {
		l.ringInterest(s)
		return
	}
	if l.oneShot {
		return // applied when the design rearms it
	}
	if want := l.wantEvents(s); want != s.interest {
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, s.fd, want, s.ref); err != nil {
			l.closeSource(s)
			return
		}
		s.interest = want
	}
}

// closeSource closes a connection and revokes its identity: later events,
// queued turns and worker results carrying its Ref are stale.
func (l *Loop) closeSource(s *Source) {
	if s.state == stateClosed {
		return
	}
	if l.cfg.Faults.LeakPending && (!s.out.Empty() || s.tasks > 0) {
		// The mutant: a connection that dies with work pending is forgotten
		// instead of closed. It stops being watched, but its fd stays open
		// and its slot allocated (both leak until the reactor exits), and
		// ConnsClosed misses it.
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
		for _, q := range l.queues {
			q.Remove(s.ref.Slot())
		}
		if s.hadOut {
			s.hadOut = false
			l.r.outPending.Add(-1) // nobody will drain it
		}
		return
	}
	if s.shutWr {
		l.r.drainOpen.Add(-1)
	}
	if s.twinned { // the mutant's duplicate keeps the file open: leave the set first
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
	}
	if l.completion {
		l.ringClose(s) // at once, or once its operations in flight are cancelled
	} else {
		unix.Close(s.fd) // also removes it from the epoll set (no dups exist)
	}
	if s.kind == kindConn {
		l.open.Add(-1)
	}
	if s.fd < len(l.fdIndex) && l.fdIndex[s.fd] == s.ref {
		l.fdIndex[s.fd] = 0
	}
	s.fd = -1
	l.setState(s, stateClosed)
	l.table.Free(s.ref)
	for _, q := range l.queues {
		q.Remove(s.ref.Slot())
	}
	if s.hadOut {
		s.hadOut = false
		l.r.outPending.Add(-1)
	}
	if s.in != nil {
		l.putBuf(s)
	}
	s.out.Release()
	l.putSendBuf(s)
	l.stats.ConnsClosed++
	l.progress++
}
