//go:build linux

package reactors

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// applySched puts the calling thread (which must be locked to its
// goroutine, and stay locked until it exits, so that no other goroutine
// ever runs on it) into s's class with sched_setattr. Children of the
// thread do not inherit a real-time class or a negative nice value
// (SCHED_FLAG_RESET_ON_FORK); the Go runtime never starts a thread from a
// locked one anyway (it hands that to its template thread). SchedOther is
// a no-op: the thread keeps the class the process started with.
func applySched(s Sched) error {
	if s.Class == SchedOther {
		return nil
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	switch s.Class {
	case SchedNice:
		attr.Policy, attr.Nice = unix.SCHED_NORMAL, int32(s.Value)
	case SchedFIFO:
		attr.Policy, attr.Priority = unix.SCHED_FIFO, uint32(s.Value)
	case SchedRR:
		attr.Policy, attr.Priority = unix.SCHED_RR, uint32(s.Value)
	default:
		return fmt.Errorf("%w: control-sched %q: unknown class", ErrConfig, s)
	}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return schedRefusal(s, err)
	}
	return nil
}

// schedRefusal says why the kernel refused s, naming the privilege that
// would grant it.
func schedRefusal(s Sched, err error) error {
	wrapped := func(why string) error {
		return fmt.Errorf("%w: control-sched %s: sched_setattr: %w%s", ErrConfig, s, err, why)
	}
	if !errors.Is(err, unix.EPERM) {
		return wrapped("")
	}
	why := ""
	switch {
	case s.RealTime():
		why = fmt.Sprintf(": a real-time class needs CAP_SYS_NICE or RLIMIT_RTPRIO >= %d (a rootless lab cannot grant it; leave control-sched at other)", s.Value)
	case s.Value < 0:
		why = fmt.Sprintf(": a negative nice value needs CAP_SYS_NICE or RLIMIT_NICE >= %d", 20-s.Value)
	}
	return privilegeRefusal{wrapped(why)}
}

// privilegeRefusal is a refusal for a missing privilege: it is
// ErrPrivilege as well as what it wraps, with the same message.
type privilegeRefusal struct{ error }

func (p privilegeRefusal) Is(target error) bool { return target == ErrPrivilege }
func (p privilegeRefusal) Unwrap() error        { return p.error }

// probeSched checks, before anything starts, that this process may put a
// thread in s's class: it applies s on a thread of its own, locked and
// then discarded (a goroutine that exits locked takes its thread with it),
// so no thread the process keeps is changed.
func probeSched(s Sched) error {
	if s.Class == SchedOther {
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		errc <- applySched(s)
	}()
	return <-errc
}

// threadSched reads the calling thread's class back from the kernel, in
// ParseSched's form (so a manifest records what was in force, not what
// was asked).
func threadSched() string {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	switch attr.Policy {
	case unix.SCHED_FIFO:
		return Sched{Class: SchedFIFO, Value: int(attr.Priority)}.String()
	case unix.SCHED_RR:
		return Sched{Class: SchedRR, Value: int(attr.Priority)}.String()
	case unix.SCHED_NORMAL:
		if attr.Nice != 0 {
			return Sched{Class: SchedNice, Value: int(attr.Nice)}.String()
		}
		return string(SchedOther)
	}
	return fmt.Sprintf("policy %d", attr.Policy)
}

// enterSched puts the control loop's thread (the calling, locked one)
// into Config.ControlSched's class and arms the real-time hold when that
// class is real-time; the other loops keep the process's class. New has
// probed the class, so a refusal here is a reactor failure.
func (l *Loop) enterSched() {
	s, _ := ParseSched(l.cfg.ControlSched) // accepted by Validate
	if l.id == l.r.layout.ControlLoop && s.Class != SchedOther {
		if err := applySched(s); err != nil {
			l.r.fail(err)
		} else if s.RealTime() {
			l.rtHold = int64(l.cfg.RTHold)
		}
	}
	class := threadSched()
	l.sched.Store(&class)
}

// LoopSched returns each loop thread's scheduling class as the kernel
// reported it when the loop started ("other", "nice:-5", "fifo:10"; ""
// for a loop not yet running).
func (r *Reactor) LoopSched() []string {
	out := make([]string, len(r.loops))
	for i, l := range r.loops {
		if p := l.sched.Load(); p != nil {
			out[i] = *p
		}
	}
	return out
}

// restIfHeld is the real-time hold. A loop whose thread runs in a
// real-time class, and which has been busy since it last blocked in
// epoll_wait (or last rested) for at least cfg.RTHold, sleeps as long as
// it was busy, so the time-sharing threads on its CPU (the data loop) run.
// The loop calls it after each consume pass and each dispatched batch, so
// a stretch lasts at most RTHold plus one pass or batch (each bounded by
// the budgets); while it has work without pause, a real-time loop thus
// takes at most half of its CPU, in stretches of that length. An idle one
// blocks and never rests. Only loops with rtHold > 0 call it.
func (l *Loop) restIfHeld() {
	now := nanotime()
	if l.busySince == 0 {
		l.busySince = now
		return
	}
	held := now - l.busySince
	if held < l.rtHold {
		return
	}
	l.noteHold(now)
	ts := unix.NsecToTimespec(held)
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
	l.stats.RTRests++
	l.busySince = nanotime()
}

// noteHold records the stretch ending now (at a rest, or before a blocking
// wait) in RTLongestHoldNs. Only loops with rtHold > 0 call it.
func (l *Loop) noteHold(now int64) {
	if l.busySince != 0 {
		l.stats.RTLongestHoldNs = max(l.stats.RTLongestHoldNs, uint64(now-l.busySince))
	}
}
