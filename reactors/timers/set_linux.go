//go:build linux

package timers

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"
)

// Set is the timer set of one owner loop: the scheduled timers in deadline order
// (FIFO among equal deadlines) and the timerfd that wakes the loop for them.
//
// A Set is owned by a single loop thread and must not be used concurrently; it has
// no locks. Its invariants, outside Expire:
//   - Periodic: the timerfd expires every tick until Close, independent of the timers.
//   - Deadline: the timerfd is armed to the nearest Due (clamped to at least 1 ns,
//     because 0 would disarm it), or disarmed when the set is empty. timerfd_settime
//     is called only when that target differs from what the fd holds. Between an
//     Acknowledge that found the one-shot timer spent and the next Expire, Schedule
//     or Cancel, the fd holds nothing; that next call re-arms it.
//
// Operations never panic on bad input. A failing system call after New (which
// does not happen with a valid fd) is remembered and reported by [Set.Err].
type Set struct {
	tb       table
	mode     Mode
	tick     time.Duration
	fd       int   // the timerfd; -1 after Close
	armed    int64 // Deadline: absolute ns the timerfd is armed to; 0 = disarmed or spent
	expiring bool  // inside Expire: new timers are staged and re-arming waits
	err      error
	stats    Stats
	spec     unix.ItimerSpec // kept here so timerfd_settime does not allocate
	buf      [8]byte         // the timerfd expiration counter read by Acknowledge
}

// Stats counts what a Set did since New. The fields only grow.
type Stats struct {
	Scheduled uint64 // timers accepted by Schedule
	Cancelled uint64 // Cancel calls that removed a live timer
	Ran       uint64 // timers passed to the callback of Expire
	Arms      uint64 // timerfd_settime calls that armed the timerfd (Periodic: 1, in New)
	Disarms   uint64 // timerfd_settime calls that disarmed it (Deadline, set became empty)
	Wakeups   uint64 // Acknowledge calls that read a non-zero expiration count
	Expired   uint64 // sum of the expiration counts read by Acknowledge
}

// New creates an empty Set in the given mode with its timerfd (CLOCK_MONOTONIC,
// TFD_NONBLOCK|TFD_CLOEXEC). tick is the Periodic interval and must be positive
// ([DefaultTick] is the usual value); the timerfd starts ticking at once. Deadline
// ignores tick and starts disarmed. Errors wrap [ErrUnknownMode], [ErrInvalidTick]
// or the failing system call.
func New(mode Mode, tick time.Duration) (*Set, error) {
	if !mode.valid() {
		return nil, fmt.Errorf("timers: new: %w %v", ErrUnknownMode, mode)
	}
	if mode == Periodic && tick <= 0 {
		return nil, fmt.Errorf("timers: new periodic: %w: tick %v must be positive", ErrInvalidTick, tick)
	}
	if mode == Deadline {
		tick = 0
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timers: new %v: %w", mode, os.NewSyscallError("timerfd_create", err))
	}
	s := &Set{mode: mode, tick: tick, fd: fd}
	if mode == Periodic {
		ts := unix.NsecToTimespec(int64(tick))
		s.spec = unix.ItimerSpec{Interval: ts, Value: ts}
		if err := unix.TimerfdSettime(fd, 0, &s.spec, nil); err != nil {
			// The settime error is the one to report; closing the fresh,
			// unshared fd cannot fail in a way that matters more.
			_ = unix.Close(fd)
			return nil, fmt.Errorf("timers: new periodic tick %v: %w", tick, os.NewSyscallError("timerfd_settime", err))
		}
		s.stats.Arms++
	}
	return s, nil
}

// Now returns the CLOCK_MONOTONIC time in nanoseconds, the clock of Timer.Due and
// of the timerfd. It is the runtime's own monotonic clock (vDSO, tens of
// nanoseconds, no allocation): unix.ClockGettime makes a real system call on
// some virtual machines (2.4–2.9 µs measured here), too slow for a loop that
// reads the clock every round.
func Now() int64 { return nanotime() }

// nanotime is runtime.nanotime: clock_gettime(CLOCK_MONOTONIC) through the
// vDSO, the same clock timerfd's CLOCK_MONOTONIC uses.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Fd returns the timerfd for the loop to register in its epoll set with EPOLLIN,
// or -1 after Close. The Set keeps ownership: the loop must not read or close it.
func (s *Set) Fd() int { return s.fd }

// Mode returns the mode the Set was created with.
func (s *Set) Mode() Mode { return s.mode }

// Tick returns the Periodic interval, or 0 in Deadline mode.
func (s *Set) Tick() time.Duration { return s.tick }

// Stats returns the counters since New.
func (s *Set) Stats() Stats { return s.stats }

// Err returns the first error of a system call made after New (timerfd_settime
// when re-arming, read in Acknowledge), or nil. A non-nil Err means a wakeup may
// be missed: the Set stays consistent and keeps retrying at each change, but the
// loop should treat it as fatal, or at least bound its epoll_wait by [Set.Next].
func (s *Set) Err() error { return s.err }

// Len returns the number of scheduled timers, including those scheduled during the
// current Expire call.
func (s *Set) Len() int { return s.tb.len() }

// Next returns the nearest deadline among the scheduled timers, or ok false if
// there is none. A loop can bound its epoll_wait timeout with it.
func (s *Set) Next() (due int64, ok bool) { return s.tb.next() }

// Schedule adds t and returns its ID. It is O(log n) and does not allocate once the
// set has held as many timers as it holds now (slots of fired and cancelled timers
// are reused). In Deadline mode it re-arms the timerfd when t becomes the nearest
// deadline (not when it ties with it: the earlier timer comes first).
//
// Called from a callback inside Expire, t is staged: it counts in Len and Next and
// can be cancelled, but runs at the earliest in the next Expire call, even if it is
// already due (the continue-scheduling rule, see the package doc).
//
// It returns 0, and schedules nothing, after Close (or if the set already holds
// 2^31-1 timers).
func (s *Set) Schedule(t Timer) ID {
	if s.fd < 0 {
		return 0
	}
	slot, ok := s.tb.alloc()
	if !ok {
		return 0
	}
	s.tb.add(slot, t, s.expiring)
	s.stats.Scheduled++
	s.rearm()
	return s.tb.idOf(slot)
}

// Cancel removes the timer named by id and reports whether it was still scheduled.
// It returns false, changing nothing, for a timer that already ran or was
// cancelled, for 0 and for any ID this Set did not issue: stale IDs are safe.
// O(log n). In Deadline mode it re-arms the timerfd if the nearest deadline changed
// and disarms it if the set became empty. A callback may cancel any timer,
// including ones due in the current Expire call, which then do not run.
func (s *Set) Cancel(id ID) bool {
	slot, ok := s.tb.lookup(id)
	if !ok {
		return false
	}
	s.tb.remove(slot)
	s.stats.Cancelled++
	s.rearm()
	return true
}

// Acknowledge reads the timerfd's expiration counter and returns it, or 0 if the
// fd was not readable. Call it when epoll reports the fd readable; a level-triggered
// registration keeps reporting the fd until it is acknowledged or, in Deadline mode,
// re-armed. In Deadline mode a non-zero count means the one-shot timer is spent, so
// the next Expire (or Schedule/Cancel) re-arms it for whatever is still scheduled.
func (s *Set) Acknowledge() uint64 {
	if s.fd < 0 {
		return 0
	}
	for {
		n, err := unix.Read(s.fd, s.buf[:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return 0
		}
		if err != nil {
			s.setErr(os.NewSyscallError("read timerfd", err))
			return 0
		}
		if n != len(s.buf) {
			s.setErr(fmt.Errorf("timers: read timerfd: %d bytes, want %d", n, len(s.buf)))
			return 0
		}
		count := binary.NativeEndian.Uint64(s.buf[:])
		if count > 0 {
			s.stats.Wakeups++
			s.stats.Expired += count
			if s.mode == Deadline {
				s.armed = 0
			}
		}
		return count
	}
}

// Expire runs fn for every timer with Due <= now that was scheduled before this
// call, in deadline order (FIFO among equal Due), and returns how many ran. Each
// timer is removed before fn is called with it, so fn may Schedule and Cancel.
//
// The continue-scheduling rule: timers scheduled by fn are staged and run at the
// earliest in the next Expire call, even if their Due <= now, so a callback that
// reschedules itself at now cannot make Expire loop forever. Timers cancelled by fn
// do not run. Before returning (also if fn panics), Expire queues the staged timers
// and, in Deadline mode, re-arms the timerfd to the nearest deadline — if a staged
// timer is already due, the fd becomes readable at once and the loop comes back.
//
// now is normally [Now] read by the loop for this round. Expire called from fn
// returns 0 and does nothing; with a nil fn, or after Close, it runs nothing and
// returns 0 (due timers stay scheduled; a nil fn still re-arms).
func (s *Set) Expire(now int64, fn func(Timer)) int {
	if s.expiring || s.fd < 0 {
		return 0
	}
	if fn == nil {
		s.rearm()
		return 0
	}
	s.expiring = true
	defer s.endExpire()
	ran := 0
	for len(s.tb.heap) > 0 && s.tb.heap[0].due <= now {
		slot := s.tb.heap[0].slot
		t := s.tb.entries[slot].t
		s.tb.unqueue(0)
		s.tb.release(slot)
		ran++
		s.stats.Ran++
		fn(t)
	}
	return ran
}

// endExpire ends an Expire call: staged timers join the heap and the timerfd is
// re-armed once for all the changes the callbacks made.
func (s *Set) endExpire() {
	s.expiring = false
	s.tb.unstageAll()
	s.rearm()
}

// rearm makes the Deadline timerfd match the nearest deadline. It is a no-op in
// Periodic mode, during Expire (which re-arms once at its end) and after Close.
func (s *Set) rearm() {
	if s.mode != Deadline || s.expiring || s.fd < 0 {
		return
	}
	var want int64 // 0 disarms
	if len(s.tb.heap) > 0 {
		// An absolute value in the past fires at once; 0 would disarm instead.
		want = max(s.tb.heap[0].due, 1)
	}
	if want == s.armed {
		return
	}
	s.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(want)}
	if err := unix.TimerfdSettime(s.fd, unix.TFD_TIMER_ABSTIME, &s.spec, nil); err != nil {
		// The kernel kept the previous setting, which s.armed still describes;
		// the next change retries.
		s.setErr(os.NewSyscallError("timerfd_settime", err))
		return
	}
	s.armed = want
	if want == 0 {
		s.stats.Disarms++
	} else {
		s.stats.Arms++
	}
}

// setErr keeps the first error.
func (s *Set) setErr(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("timers: %v set: %w", s.mode, err)
	}
}

// Close drops every scheduled timer (their IDs become stale) and closes the timerfd.
// It is idempotent: later calls return nil. After Close, Fd returns -1, Schedule
// returns 0, Cancel false, Expire and Acknowledge 0; Mode, Stats and Err still work.
func (s *Set) Close() error {
	if s.fd < 0 {
		return nil
	}
	fd := s.fd
	s.fd = -1
	s.armed = 0
	s.tb.reset()
	// close is not retried on EINTR: Linux releases the fd even then, and a retry
	// could close an fd another thread has just been given.
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("timers: close %v set: %w", s.mode, os.NewSyscallError("close", err))
	}
	return nil
}
