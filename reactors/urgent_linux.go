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
// past it. With urgent data on, the loop polls a data connection before
// each in-band read (one more syscall per read: the byte may come at any
// moment, after the event that started the turn too), takes an urgent byte
// the poll reports, and reads in-band only while the poll reports in-band
// data: none is reported when the only byte queued is the urgent one, read
// or not, or the mark of one already read (tcp_poll asks for a byte past
// the mark). An urgent byte that lands after that poll can only land
// behind the data it reported, where the read stops at its mark; a read
// made on an empty socket would start at the mark of a byte landing just
// before it. A turn reads until the poll reports nothing to read (the
// next byte to arrive raises a new event).

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

// urgentReadable takes s's urgent byte while poll(2) reports one unread
// (POLLPRI), and reports whether an in-band read may start: poll reports
// in-band data past any urgent mark (POLLIN), an error or a hang-up. A
// failed poll reports true, leaving the read to say what is wrong.
func (l *Loop) urgentReadable(s *Source) bool {
	for range 3 { // an urgent byte taken ends POLLPRI; bounded all the same
		fds := [1]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN | unix.POLLPRI}}
		if _, err := unix.Ppoll(fds[:], &unix.Timespec{}, nil); err != nil {
			return true
		}
		if fds[0].Revents&unix.POLLPRI == 0 {
			return fds[0].Revents&(unix.POLLIN|unix.POLLERR|unix.POLLHUP) != 0
		}
		if l.serveUrgent(s); s.state == stateClosed {
			return false
		}
	}
	return true
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
