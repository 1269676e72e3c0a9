//go:build linux

package reactors

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Urgent data (Config.Urgent = UrgentOOB). A data connection is registered
// with EPOLLPRI, and SO_OOBINLINE stays off, so the one byte a client
// sends with MSG_OOB is kept out of the in-band stream and the socket
// reports EPOLLPRI while it is unread. The loop reads it with
// recv(MSG_OOB) when the event arrives, before the connection's in-band
// batch is served, and answers with send(MSG_OOB) of the same byte once
// its in-band reads have reached the byte's mark (at once when SIOCATMARK
// says they have; else at the in-band read after which SIOCATMARK says so,
// or which comes back short or EAGAIN): the answer lets the client send its next urgent byte, and one
// that arrives while the reader is still before the first mark turns the
// first byte, though already read out of band, into an in-band byte. An
// answer the socket cannot take yet (EAGAIN) waits in the source and goes
// out, still out of band, before the out-queue's next write. What TCP
// urgent data is and is not (RFC 6093): one byte per urgent mark; a
// second urgent byte sent before the first was read moves the mark and
// turns the first into an in-band byte; an in-band read that has copied
// data stops at the mark (a short read that does not mean the socket is
// empty), and one that starts at the mark skips the byte, after which the
// kernel forgets it (recv(MSG_OOB) says EINVAL). So a client keeps one
// urgent byte outstanding at a time, and takes it before reading in-band
// past it; with urgent data on, the loop tries recv(MSG_OOB) before
// every in-band read of a data connection (one more syscall per read: the
// byte may have come after the event that started the turn), and a turn
// reads until EAGAIN.

// serveUrgent reads s's urgent byte, if one is there, and answers it.
// EINVAL (no urgent byte, or already read) and EAGAIN (the mark has
// arrived, the byte not yet: EPOLLPRI comes again with it) leave nothing
// to do; another error closes s.
func (l *Loop) serveUrgent(s *Source) {
	var b [1]byte
	n, _, err := unix.Recvfrom(s.fd, b[:], unix.MSG_OOB|unix.MSG_DONTWAIT)
	switch {
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EAGAIN) || err == nil && n == 0:
		return
	case err != nil:
		l.closeSource(s)
		return
	}
	l.stats.UrgentIn++
	l.progress++
	s.urgentByte = b[0]
	if atUrgentMark(s.fd) {
		l.sendUrgent(s)
		return
	}
	s.urgentPastMark = true // answered by the read that reaches the mark
}

// atUrgentMark reports whether the in-band reads of fd stand at its urgent
// mark (SIOCATMARK).
func atUrgentMark(fd int) bool {
	at, err := unix.IoctlGetInt(fd, unix.SIOCATMARK)
	return err == nil && at == 1
}

// sendUrgent sends s's urgent answer with MSG_OOB, and reports whether s
// is still open. A full socket (EAGAIN) keeps it pending, with EPOLLOUT
// wanted; another error closes s.
func (l *Loop) sendUrgent(s *Source) bool {
	s.urgentPending = true
	err := unix.Sendto(s.fd, []byte{s.urgentByte}, unix.MSG_OOB|unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil)
	switch {
	case err == nil:
		s.urgentPending = false
		l.stats.UrgentOut++
	case errors.Is(err, unix.EAGAIN):
	default:
		l.closeSource(s)
		return false
	}
	l.updateInterest(s)
	return true
}
