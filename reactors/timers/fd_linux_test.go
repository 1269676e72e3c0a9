//go:build linux

package timers

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests wait on the timerfd the way an owner loop does: through an epoll fd
// created here, never with time.Sleep. Timeouts passed to epoll_wait are either the
// point of the assertion (silence for 100 ms) or generous failure bounds (seconds)
// that a correct Set never comes near.

// failBound bounds every wait for something that must happen; reaching it is a
// failure, not a slow pass.
const failBound = 2 * time.Second

// poller is an epoll fd watching one timerfd for EPOLLIN, level-triggered like the
// reference reactors.
type poller struct {
	epfd   int
	fd     int
	events [4]unix.EpollEvent
}

func newPoller(t *testing.T, fd int) *poller {
	t.Helper()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("epoll_create1: %v", err)
	}
	t.Cleanup(func() { unix.Close(epfd) })
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		t.Fatalf("epoll_ctl add timerfd %d: %v", fd, err)
	}
	return &poller{epfd: epfd, fd: fd}
}

// wait blocks in epoll_wait for up to timeout (restarting after EINTR with the time
// left) and reports whether the timerfd was reported readable, and when.
func (p *poller) wait(t *testing.T, timeout time.Duration) (readable bool, at int64) {
	t.Helper()
	end := Now() + int64(timeout)
	for {
		left := time.Duration(end - Now())
		if left < 0 {
			left = 0
		}
		// Round up: epoll_wait would otherwise return before the deadline.
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		n, err := unix.EpollWait(p.epfd, p.events[:], ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("epoll_wait: %v", err)
		}
		at = Now()
		if n == 0 {
			return false, at
		}
		if ev := p.events[0]; ev.Fd != int32(p.fd) || ev.Events&unix.EPOLLIN == 0 {
			t.Fatalf("unexpected event %+v", ev)
		}
		return true, at
	}
}

// mustWake waits for the timerfd to become readable within failBound.
func (p *poller) mustWake(t *testing.T, what string) int64 {
	t.Helper()
	ok, at := p.wait(t, failBound)
	if !ok {
		t.Fatalf("%s: timerfd not readable within %v", what, failBound)
	}
	return at
}

// mustStaySilent requires epoll_wait to time out: no wakeup for d.
func (p *poller) mustStaySilent(t *testing.T, s *Set, d time.Duration, what string) {
	t.Helper()
	if ok, _ := p.wait(t, d); ok {
		t.Fatalf("%s: timerfd readable within %v (read %d expirations, %d timers, stats %+v)",
			what, d, s.Acknowledge(), s.Len(), s.Stats())
	}
}

// TestDeadlineFiresAtDueThenSilent: a timer 20 ms ahead makes the fd readable, not
// before its due time, and Expire runs it; then the empty set stays silent. The
// silence is the point of Deadline mode: zero idle wakeups.
func TestDeadlineFiresAtDueThenSilent(t *testing.T) {
	s := newSet(t, Deadline, 0)
	p := newPoller(t, s.Fd())
	p.mustStaySilent(t, s, 100*time.Millisecond, "new empty set")

	due := Now() + int64(20*time.Millisecond)
	want := Timer{Due: due, Kind: 7, Arg: 42}
	s.Schedule(want)
	at := p.mustWake(t, "timer 20 ms ahead")
	if at < due {
		t.Fatalf("readable %v before the due time", time.Duration(due-at))
	}
	if n := s.Acknowledge(); n != 1 {
		t.Fatalf("Acknowledge = %d, want 1 expiration of the one-shot timer", n)
	}
	var got []Timer
	if n := s.Expire(Now(), func(tm Timer) { got = append(got, tm) }); n != 1 || got[0] != want {
		t.Fatalf("Expire ran %d: %+v, want %+v", n, got, want)
	}
	p.mustStaySilent(t, s, 100*time.Millisecond, "set emptied by Expire")
	// The spent one-shot timer needs no disarming: one timerfd_settime in all.
	if st := s.Stats(); st.Arms != 1 || st.Disarms != 0 || st.Wakeups != 1 {
		t.Fatalf("stats %+v, want 1 arm, 0 disarms, 1 wakeup", st)
	}
}

// TestDeadlineCancelDisarms: cancelling the only timer disarms the timerfd, so it
// stays silent past the cancelled deadline.
func TestDeadlineCancelDisarms(t *testing.T) {
	s := newSet(t, Deadline, 0)
	p := newPoller(t, s.Fd())
	id := s.Schedule(Timer{Due: Now() + int64(30*time.Millisecond)})
	if !s.Cancel(id) {
		t.Fatal("Cancel of the only timer = false")
	}
	// 130 ms: 100 ms of silence beyond the deadline the fd was armed to.
	p.mustStaySilent(t, s, 130*time.Millisecond, "only timer cancelled")
	if st := s.Stats(); st.Arms != 1 || st.Disarms != 1 {
		t.Fatalf("stats %+v, want 1 arm and 1 disarm", st)
	}
}

// TestDeadlineRearmEarlier: a timer earlier than the armed deadline re-arms the fd,
// which then fires at the earlier deadline, not the later one.
func TestDeadlineRearmEarlier(t *testing.T) {
	s := newSet(t, Deadline, 0)
	p := newPoller(t, s.Fd())
	late := Now() + int64(10*time.Second) // far beyond failBound
	s.Schedule(Timer{Due: late, Arg: 2})
	early := Now() + int64(20*time.Millisecond)
	s.Schedule(Timer{Due: early, Arg: 1})
	if st := s.Stats(); st.Arms != 2 {
		t.Fatalf("stats %+v, want 2 arms (late, then early)", st)
	}
	if at := p.mustWake(t, "re-armed to the earlier deadline"); at < early {
		t.Fatalf("readable %v before the early deadline", time.Duration(early-at))
	}
	s.Acknowledge()
	var ran []uint64
	s.Expire(Now(), func(tm Timer) { ran = append(ran, tm.Arg) })
	if len(ran) != 1 || ran[0] != 1 {
		t.Fatalf("Expire ran %v, want only the early timer [1]", ran)
	}
	if due, ok := s.Next(); !ok || due != late || s.armed != late {
		t.Fatalf("Next = %d %v, armed %d; want the late deadline %d", due, ok, s.armed, late)
	}
}

// TestDeadlineLaterDoesNotDelay: timers due at or after the armed deadline neither
// re-arm the fd nor delay the earlier one.
func TestDeadlineLaterDoesNotDelay(t *testing.T) {
	s := newSet(t, Deadline, 0)
	p := newPoller(t, s.Fd())
	early := Now() + int64(20*time.Millisecond)
	s.Schedule(Timer{Due: early, Arg: 1})
	s.Schedule(Timer{Due: Now() + int64(10*time.Second), Arg: 3})
	s.Schedule(Timer{Due: early, Arg: 2}) // a tie: after Arg 1, same deadline
	if st := s.Stats(); st.Arms != 1 {
		t.Fatalf("stats %+v: a later or equal deadline re-armed the fd", st)
	}
	if at := p.mustWake(t, "earlier deadline"); at < early {
		t.Fatalf("readable %v before the deadline", time.Duration(early-at))
	}
	s.Acknowledge()
	var ran []uint64
	s.Expire(Now(), func(tm Timer) { ran = append(ran, tm.Arg) })
	if len(ran) != 2 || ran[0] != 1 || ran[1] != 2 {
		t.Fatalf("Expire ran %v, want [1 2]", ran)
	}
}

// TestDeadlineNoLostWakeup: the loop acknowledged the expiration but read its clock
// just before the deadline, so Expire found nothing due. The one-shot timer is
// spent; unless the Set re-arms it, the deadline never wakes the loop again.
func TestDeadlineNoLostWakeup(t *testing.T) {
	s := newSet(t, Deadline, 0)
	p := newPoller(t, s.Fd())
	due := Now() + int64(10*time.Millisecond)
	s.Schedule(Timer{Due: due, Arg: 1})
	p.mustWake(t, "first expiration")
	if n := s.Acknowledge(); n != 1 {
		t.Fatalf("Acknowledge = %d, want 1", n)
	}
	if n := s.Expire(due-1, func(Timer) { t.Error("ran a timer not yet due") }); n != 0 {
		t.Fatalf("Expire before the deadline ran %d", n)
	}
	p.mustWake(t, "timer still due after a stale-clock Expire")
	s.Acknowledge()
	if n := s.Expire(Now(), func(Timer) {}); n != 1 {
		t.Fatalf("Expire = %d, want 1", n)
	}
}

// TestDeadlineRescheduleWakesAgain: a callback that reschedules at now gets its
// timer run in the next call, and the fd wakes the loop for that call.
func TestDeadlineRescheduleWakesAgain(t *testing.T) {
	s := newSet(t, Deadline, 0)
	p := newPoller(t, s.Fd())
	s.Schedule(Timer{Due: Now() + int64(5*time.Millisecond), Arg: 1})
	var ran []uint64
	for round := 0; len(ran) < 3; round++ {
		if round > 10 {
			t.Fatalf("%d rounds for 3 timers: ran %v", round, ran)
		}
		p.mustWake(t, "continue-scheduled timer")
		s.Acknowledge()
		now := Now()
		calls := 0
		s.Expire(now, func(tm Timer) {
			if calls++; calls > 1 {
				t.Fatalf("Expire ran %+v in the call that rescheduled it", tm)
			}
			ran = append(ran, tm.Arg)
			s.Schedule(Timer{Due: now, Arg: tm.Arg + 1}) // due already
		})
	}
	if ran[0] != 1 || ran[1] != 2 || ran[2] != 3 {
		t.Fatalf("ran %v, want [1 2 3]", ran)
	}
}

// TestPeriodicTicksWhileIdle: with nothing scheduled, a Periodic set wakes the loop
// every tick — the idle wakeups Deadline mode avoids.
func TestPeriodicTicksWhileIdle(t *testing.T) {
	const (
		tick   = time.Millisecond
		window = 100 * time.Millisecond
	)
	s := newSet(t, Periodic, tick)
	p := newPoller(t, s.Fd())
	s.Acknowledge() // drop the ticks since New
	start := Now()
	var sum uint64
	for Now()-start < int64(window) {
		p.mustWake(t, "periodic tick")
		sum += s.Acknowledge()
	}
	elapsed := time.Duration(Now() - start)
	// The kernel counts every tick boundary crossed, even while this goroutine is
	// not running, so sum ≈ elapsed/tick: 100 for the 100 ms window, ±1 for the
	// phase of the first and last read. The loop runs at least window, so sum must
	// reach window/tick/2 = 50; it may run longer than window if the test was
	// descheduled after its last wait, so the upper bound, 150 nominally, is 1.5 ×
	// the ticks in the time actually measured. Wrong units (µs or s) or a one-shot
	// timer miss both bounds by far.
	lo := uint64(window / tick / 2)
	hi := uint64(elapsed/tick) * 3 / 2
	if sum < lo || sum > hi {
		t.Fatalf("%d expirations in %v with a %v tick, want %d..%d", sum, elapsed, tick, lo, hi)
	}
	if st := s.Stats(); st.Arms != 1 {
		t.Fatalf("stats %+v, want the single arm from New", st)
	}
	t.Logf("%d expirations, %d wakeups in %v", sum, s.Stats().Wakeups, elapsed)
}

// TestTimerDeviation: in both modes a timer due in 5 ms runs at or after its due
// time and less than 50 ms late.
//
// Why 50 ms: the expected lateness is up to one tick (Periodic checks only on
// ticks) plus timer slack (50 µs for normal threads) plus the wait for a CPU. This
// machine is shared, has 2 cores and runs with the other one loaded, so a runnable
// thread can wait several scheduler slices of a few ms each. 50 ms is far above
// that and still catches the real mistakes: wrong units, relative instead of
// absolute arming (the timer would fire after the whole uptime, hitting failBound),
// or a deadline that is never armed.
func TestTimerDeviation(t *testing.T) {
	const maxLate = 50 * time.Millisecond
	for _, tc := range []struct {
		mode       Mode
		maxWakeups int // before the timer runs
	}{
		{Periodic, int(failBound / time.Millisecond)},
		{Deadline, 1}, // one-shot armed to the due time: no early wakeup
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			s := newSet(t, tc.mode, time.Millisecond)
			p := newPoller(t, s.Fd())
			due := Now() + int64(5*time.Millisecond)
			s.Schedule(Timer{Due: due})
			late := time.Duration(-1)
			for wakeups := 1; late < 0; wakeups++ {
				if wakeups > tc.maxWakeups {
					t.Fatalf("%d wakeups and the timer has not run", wakeups-1)
				}
				at := p.mustWake(t, "timer due in 5 ms")
				if tc.mode == Deadline && at < due {
					t.Fatalf("readable %v early", time.Duration(due-at))
				}
				s.Acknowledge()
				s.Expire(Now(), func(tm Timer) { late = time.Duration(Now() - tm.Due) })
			}
			if late < 0 || late >= maxLate {
				t.Fatalf("timer ran %v late, want 0 <= late < %v", late, maxLate)
			}
			t.Logf("late %v", late)
		})
	}
}

// TestFdFlags: the timerfd is non-blocking (Acknowledge on a silent fd returns 0
// instead of blocking the loop) and close-on-exec (children of the harness must
// not inherit it).
func TestFdFlags(t *testing.T) {
	for _, mode := range []Mode{Periodic, Deadline} {
		s := newSet(t, mode, time.Hour)
		fl, err := unix.FcntlInt(uintptr(s.Fd()), unix.F_GETFL, 0)
		if err != nil || fl&unix.O_NONBLOCK == 0 {
			t.Fatalf("%v: F_GETFL = %#x, %v; want O_NONBLOCK", mode, fl, err)
		}
		fd, err := unix.FcntlInt(uintptr(s.Fd()), unix.F_GETFD, 0)
		if err != nil || fd&unix.FD_CLOEXEC == 0 {
			t.Fatalf("%v: F_GETFD = %#x, %v; want FD_CLOEXEC", mode, fd, err)
		}
		if n := s.Acknowledge(); n != 0 || s.Err() != nil {
			t.Fatalf("%v: Acknowledge on a silent fd = %d, err %v", mode, n, s.Err())
		}
	}
}
