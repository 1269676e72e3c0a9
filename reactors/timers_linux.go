//go:build linux

package reactors

import (
	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/reactors/timers"
)

// Timer kinds the loop schedules.
const (
	timerApp         uint16 = iota + 1 // recurring application timer (deviation probe)
	timerAcceptPause                   // EMFILE fallback: resume accepting
)

func (l *Loop) scheduleTimer(kind uint16, due int64, arg uint64) {
	if l.timersMu != nil {
		l.timersMu.Lock()
		defer l.timersMu.Unlock()
	}
	l.timers.Schedule(timers.Timer{Due: due, Kind: kind, Arg: arg})
}

// onTimerEvent clears the timerfd. In a shared layout the loop the event
// woke also runs the due timers (every loop shares one set) and rearms the
// one-shot timerfd; otherwise each loop runs its own at the round's start
// (expireTimers).
func (l *Loop) onTimerEvent() {
	if !l.shared {
		l.timers.Acknowledge()
		return
	}
	l.timersMu.Lock()
	l.timers.Acknowledge()
	l.now = nanotime()
	l.stats.TimersFired += uint64(l.timers.Expire(l.now, l.onTimerFn))
	l.timersMu.Unlock()
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, l.timers.Fd(), unix.EPOLLIN|unix.EPOLLONESHOT, l.timerRef); err != nil {
		l.r.fail(err)
	}
}

// expireTimers runs the loop's due timers at the round's start (not in a
// shared layout: there onTimerEvent does).
func (l *Loop) expireTimers(now int64) {
	if l.shared {
		return
	}
	l.now = now
	l.stats.TimersFired += uint64(l.timers.Expire(now, l.onTimerFn))
}

func (l *Loop) onTimer(t timers.Timer) {
	l.progress++
	switch t.Kind {
	case timerApp:
		l.hist.record(l.hist.timerLate, l.now-t.Due)
		next := t.Due + int64(l.cfg.AppTimer)
		for next <= l.now {
			next += int64(l.cfg.AppTimer)
		}
		l.timers.Schedule(timers.Timer{Due: next, Kind: timerApp})
	case timerAcceptPause:
		ref := slots.Ref(t.Arg)
		s, ok := l.table.Get(ref)
		if !ok || s.fd < 0 {
			return
		}
		l.r.reserveMu.Lock()
		if l.r.reserveFd < 0 {
			if fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				l.r.reserveFd = fd
			}
		}
		l.r.reserveMu.Unlock()
		if l.completion {
			s.acceptPaused = false
			if !s.recvArmed && l.ring != nil {
				if err := l.armAccept(s); err != nil {
					l.r.fail(err)
				}
			}
			return
		}
		op := unix.EPOLL_CTL_MOD
		if s.borrowed {
			op = unix.EPOLL_CTL_ADD // paused by leaving the set (EPOLLEXCLUSIVE takes no MOD)
		}
		if err := epollCtl(l.epfd, op, s.fd, l.listenerEvents(s), ref); err != nil {
			l.r.fail(err)
		}
	}
}
