//go:build linux

package reactors

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/outq"
	"github.com/reactorlab/reactorlab/reactors/slots"
)

// accept takes connections until EAGAIN or the accept budget; EMFILE does
// not become a busy loop (reserve-fd trick, else a timed pause).
func (l *Loop) accept(ls *Source) {
	paused := false
	l.stats.AcceptWakeups++
	budget := l.cfg.Budgets.Accept
	if l.cfg.Faults.AcceptOnceET {
		budget = 1 // the mutant: one accept per edge (see listenerEvents)
	}
	for i := 0; i < budget; i++ {
		fd, e := rawAccept(ls.fd)
		if e == unix.EAGAIN {
			if i == 0 {
				l.stats.UselessAcceptWakeups++
			}
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
		l.stats.Accepts++
		if l.isAcceptor() && !ls.control {
			l.handOff(fd, nanotime())
			continue
		}
		if s := l.addConn(fd, ls.control); s != nil && !ls.control {
			l.twin(s)
		}
	}
	if ev := l.listenerEvents(ls); ev&unix.EPOLLONESHOT != 0 && ls.fd >= 0 && !paused {
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
func (l *Loop) shedOneConnection(ls *Source) (more, paused bool) {
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
	if l.completion {
		ls.acceptPaused = true // the accept-pause timer arms the accept again
	} else if ls.borrowed { // EPOLLEXCLUSIVE takes no MOD: leave the set until resumed
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ls.fd, nil); err != nil {
			l.r.fail(os.NewSyscallError("epoll_ctl del", err))
			return false, true
		}
	} else if !l.shared { // shared layout: a one-shot listener, simply not rearmed
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, ls.fd, 0, ls.ref); err != nil {
			l.r.fail(err)
			return false, true
		}
	}
	l.stats.AcceptPauses++
	l.scheduleTimer(timerAcceptPause, nanotime()+10e6, uint64(ls.ref))
	return false, true
}

// addConn registers accepted connection fd on l; it returns its source,
// or nil when it was refused (closed and counted).
func (l *Loop) addConn(fd int, control bool) *Source {
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	s := &Source{fd: fd, kind: kindConn, control: control, loop: l,
		out: outq.New(outq.Limits{High: l.cfg.OutHigh, Low: l.cfg.OutLow, HardCap: l.cfg.OutCap})}
	ref, err := l.table.Alloc(s)
	if err != nil {
		unix.Close(fd)
		l.stats.ConnsRefused++
		return nil
	}
	s.ref = ref
	s.ringFd = -1
	interest := l.wantEvents(s)
	s.interest = interest
	s.owned.Store(0) // publish the fields above to whichever worker gets its first event
	if l.completion {
		interest = 0 // served by the ring: ringInterest arms its receive below
	}
	if err := l.registerConn(fd, interest, ref); err != nil {
		l.table.Free(ref)
		unix.Close(fd)
		l.stats.ConnsRefused++
		return nil
	}
	l.r.noteFdOwner(fd, l)
	l.open.Add(1)
	if !l.shared { // a shared table has no single owner to keep the index
		for fd >= len(l.fdIndex) {
			l.fdIndex = append(l.fdIndex, 0)
		}
		l.fdIndex[fd] = ref
	}
	l.stats.ConnsAccepted++
	l.progress++
	if l.completion {
		l.ringInterest(s)
	}
	return s
}

// addSpecial registers a non-connection descriptor in the slot table and the
// epoll set.
func (l *Loop) addSpecial(fd int, kind sourceKind, events uint32) (slots.Ref, error) {
	s := &Source{fd: fd, kind: kind, loop: l, interest: events}
	ref, err := l.table.Alloc(s)
	if err != nil {
		return 0, fmt.Errorf("register fd %d: %w", fd, err)
	}
	s.ref = ref
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, events, ref); err != nil {
		l.table.Free(ref)
		return 0, err
	}
	return ref, nil
}

// listenerEvents is the interest listener ls is registered and rearmed
// with: level-triggered, so connections left in the backlog after the
// accept budget are reported again (shared layout: one-shot, rearmed after
// each turn); a listener in every loop's set (borrowed) is EPOLLEXCLUSIVE
// when the layout says so, unless the NoAcceptCoordination mutant is on.
func (l *Loop) listenerEvents(ls *Source) uint32 {
	excl := uint32(0)
	if ls.borrowed && l.r.layout.Exclusive && !l.cfg.Faults.NoAcceptCoordination {
		excl = unix.EPOLLEXCLUSIVE
	}
	if l.cfg.Faults.AcceptOnceET {
		// The mutant: edge-triggered, every design (a shared layout too: a rearm
		// would re-report the backlog), with one accept per edge (accept).
		return unix.EPOLLIN | unix.EPOLLET | excl
	}
	return unix.EPOLLIN | l.sharedFlag() | excl
}

// addListener registers listener fd on l; afterwards it is l's to close.
func (l *Loop) addListener(fd int, control bool) error {
	return l.registerListener(fd, control, false)
}

// addSharedListener registers the reactor's one listener fd
// (ListenerInEverySet) in l's set; it stays the reactor's (releaseSharedListener).
func (l *Loop) addSharedListener(fd int) error {
	return l.registerListener(fd, false, true)
}

func (l *Loop) registerListener(fd int, control, borrowed bool) error {
	s := &Source{fd: fd, kind: kindListener, loop: l, control: control, borrowed: borrowed}
	ref, err := l.table.Alloc(s)
	if err != nil {
		if !borrowed {
			unix.Close(fd)
		}
		return fmt.Errorf("register fd %d: %w", fd, err)
	}
	s.ref = ref
	s.interest = l.listenerEvents(s)
	if l.completion {
		// Accepted by the ring (ring_linux.go), armed when the loop runs.
		l.listeners = append(l.listeners, ref)
		return nil
	}
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, s.interest, ref); err != nil {
		l.table.Free(ref)
		if !borrowed {
			unix.Close(fd)
		}
		return err
	}
	l.listeners = append(l.listeners, ref)
	return nil
}

// registerConn adds connection fd to the epoll set with interest, or, on
// the completion path (interest 0), to nothing: the ring serves it.
func (l *Loop) registerConn(fd int, interest uint32, ref slots.Ref) error {
	if l.completion {
		return nil
	}
	return epollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, interest, ref)
}
