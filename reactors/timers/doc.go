// Package timers is the timer set of a reactor's owner loop: it keeps the loop's
// deadlines (idle timeouts, write deadlines, probes, STOP bounds) in deadline order
// and turns them into readiness of one file descriptor, a timerfd on
// CLOCK_MONOTONIC, that the loop registers in its epoll set with EPOLLIN.
//
// # Ownership
//
// A [Set] belongs to one owner loop and is used from that loop's thread only: it has
// no locks and no atomics. It has no thread affinity either, so a design that shares
// one Set between threads (ONESHOT workers) may do so if it serialises every call,
// Expire with its callbacks included, under its own lock. Work from other threads reaches the loop through its
// ingress queue and is scheduled here by the loop itself. Callbacks run synchronously
// inside [Set.Expire], on the loop thread, so a slow callback delays the whole round.
//
// # The two modes and their trade-off
//
// [Periodic] is the classic owner-loop tick: the timerfd expires every tick (1 ms by
// default) from [New] until [Set.Close], whether or not anything is due. The loop
// re-checks everything every tick, which also hides lost-wakeup bugs elsewhere in the
// loop, at the cost of a wakeup per tick while idle (1,000 per second at 1 ms) and a
// firing delay of up to one tick.
//
// [Deadline] arms a one-shot timerfd to the absolute time of the nearest deadline
// (TFD_TIMER_ABSTIME), re-arms it only when the nearest deadline changes and disarms it
// when the set is empty: zero wakeups while nothing is due, and timers fire at their
// deadline rather than at the next tick. The price is a timerfd_settime system call
// whenever the nearest deadline changes, and a rule that must be explicit because no
// tick will paper over a mistake — the continue-scheduling rule below.
//
// # The continue-scheduling rule
//
// [Set.Expire] removes each due timer before calling its callback, so a callback may
// schedule or cancel timers. A timer scheduled while Expire runs — even one already
// due — never runs in that same call: it runs at the earliest in the next Expire call.
// This bounds every Expire call (a callback that reschedules itself at now cannot loop
// forever) and keeps the round budget of the owner loop meaningful. So that such a
// timer is not forgotten, Expire re-arms the timerfd before returning (Deadline mode):
// a timer that is already due makes the fd readable at once, and the next round runs it.
//
// After epoll reports the fd readable the loop calls [Set.Acknowledge]. In Deadline
// mode this also records that the one-shot timer is spent, so the next Expire re-arms
// it even if the nearest deadline did not change (for instance when the loop read its
// clock just before the deadline and Expire found nothing due). Without that, the
// deadline would never wake the loop again: a lost wakeup.
//
// A typical round (error handling omitted):
//
//	s.Expire(timers.Now(), run)        // run due timers, re-arm
//	n, _ := unix.EpollWait(epfd, events, timeout)
//	for _, ev := range events[:n] {
//		if int(ev.Fd) == s.Fd() {
//			s.Acknowledge()             // consume the expirations
//		}
//	}
package timers
