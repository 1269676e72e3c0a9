//go:build linux

package timers

import (
	"fmt"
	"testing"
	"time"
)

// benchBackground is how many timers sit in the set during the benchmarks, so the
// heap has a realistic depth (~10 levels).
const benchBackground = 1000

// benchSet returns a set holding benchBackground timers due an hour from now and
// later, and that hour: the deadlines the benchmarks schedule lie before it, in the
// future, so the timerfd is armed as in a live loop (arming a time already past
// makes the kernel expire the timer at once, a different and costlier path).
func benchSet(b *testing.B, mode Mode) (*Set, int64) {
	s := newSet(b, mode, time.Hour) // Periodic: keep the tick out of the measurement
	base := Now() + int64(time.Hour)
	for i := range benchBackground {
		s.Schedule(Timer{Due: base + int64(i)*int64(time.Millisecond)})
	}
	return s, base
}

// BenchmarkScheduleCancel: schedule one timer and cancel it again. "nearest" makes
// every Schedule and Cancel change the nearest deadline, so Deadline mode pays two
// timerfd_settime calls per op; "far" changes nothing the timerfd cares about.
func BenchmarkScheduleCancel(b *testing.B) {
	for _, mode := range []Mode{Periodic, Deadline} {
		for _, tc := range []struct {
			name   string
			offset time.Duration // from the nearest background deadline
		}{{"nearest", -time.Minute}, {"far", time.Hour}} {
			b.Run(fmt.Sprintf("%v/%s", mode, tc.name), func(b *testing.B) {
				s, base := benchSet(b, mode)
				due := base + int64(tc.offset)
				b.ReportAllocs()
				for b.Loop() {
					s.Cancel(s.Schedule(Timer{Due: due, Arg: 1}))
				}
				if s.Len() != benchBackground || s.Err() != nil {
					b.Fatalf("Len %d, Err %v", s.Len(), s.Err())
				}
			})
		}
	}
}

// BenchmarkScheduleExpire: schedule a timer due now and expire it, the cycle of a
// timer that fires. In Deadline mode each op re-arms twice (to the new timer, then
// back to the background's nearest).
func BenchmarkScheduleExpire(b *testing.B) {
	for _, mode := range []Mode{Periodic, Deadline} {
		b.Run(mode.String(), func(b *testing.B) {
			s, base := benchSet(b, mode)
			ran := 0
			fn := func(Timer) { ran++ }
			// A logical clock creeping towards base: each timer is the nearest
			// deadline, still in the future for the kernel, and due for Expire.
			now := base - int64(time.Minute)
			b.ReportAllocs()
			for b.Loop() {
				now++
				s.Schedule(Timer{Due: now, Arg: 1})
				s.Expire(now, fn)
			}
			if ran != b.N || s.Len() != benchBackground || s.Err() != nil {
				b.Fatalf("ran %d of %d, Len %d, Err %v", ran, b.N, s.Len(), s.Err())
			}
		})
	}
}

// BenchmarkNow: the clock_gettime call the loop makes every round.
func BenchmarkNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Now()
	}
}
