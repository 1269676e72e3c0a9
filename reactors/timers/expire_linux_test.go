//go:build linux

package timers

import (
	"slices"
	"testing"
)

// TestExpireContinueScheduling covers the continue-scheduling rule without the
// timerfd: what a callback may do and which of its timers run in which call.
func TestExpireContinueScheduling(t *testing.T) {
	for _, mode := range []Mode{Periodic, Deadline} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Run("reschedule at now runs once per call", func(t *testing.T) {
				s := newSet(t, mode, DefaultTick)
				const now = 1000
				s.Schedule(Timer{Due: now, Arg: 0})
				for call := 1; call <= 1000; call++ {
					calls := 0
					n := s.Expire(now, func(tm Timer) {
						// A rule that ran staged timers in the same call would
						// come back here at once, for ever: fail instead of hanging.
						if calls++; calls > 1 {
							t.Fatalf("call %d: callback re-entered for %+v within one Expire", call, tm)
						}
						if tm.Arg != uint64(call-1) {
							t.Fatalf("call %d ran Arg %d, want %d", call, tm.Arg, call-1)
						}
						s.Schedule(Timer{Due: now, Arg: uint64(call)})
						s.Schedule(Timer{Due: now - 100, Arg: 1 << 40}) // overdue, cancelled below
						if s.Len() != 2 {
							t.Fatalf("Len during Expire = %d, want 2", s.Len())
						}
					})
					if n != 1 {
						t.Fatalf("call %d: Expire = %d, want 1", call, n)
					}
					// Drop the overdue one so that only the chain remains.
					cancelArg(t, s, 1<<40)
				}
			})

			t.Run("older due timers still run behind a staged one", func(t *testing.T) {
				s := newSet(t, mode, DefaultTick)
				s.Schedule(Timer{Due: 5, Arg: 'A'})
				s.Schedule(Timer{Due: 8, Arg: 'B'})
				s.Schedule(Timer{Due: 11, Arg: 'D'}) // not due at 10
				var order []uint64
				fn := func(tm Timer) {
					order = append(order, tm.Arg)
					if tm.Arg == 'A' {
						s.Schedule(Timer{Due: 6, Arg: 'C'}) // due, earlier than B
					}
				}
				if n := s.Expire(10, fn); n != 2 || !slices.Equal(order, []uint64{'A', 'B'}) {
					t.Fatalf("first Expire ran %d: %c, want A B", n, order)
				}
				order = nil
				if n := s.Expire(10, fn); n != 1 || !slices.Equal(order, []uint64{'C'}) {
					t.Fatalf("second Expire ran %d: %c, want C", n, order)
				}
				if due, ok := s.Next(); !ok || due != 11 || s.Len() != 1 {
					t.Fatalf("Next = %d %v, Len %d; want 11 true, 1", due, ok, s.Len())
				}
				checkInvariants(t, s)
			})

			t.Run("callback cancels due and staged timers", func(t *testing.T) {
				s := newSet(t, mode, DefaultTick)
				s.Schedule(Timer{Due: 1, Arg: 1})
				victim := s.Schedule(Timer{Due: 2, Arg: 2}) // due, cancelled before its turn
				s.Schedule(Timer{Due: 3, Arg: 3})
				var ran []uint64
				n := s.Expire(3, func(tm Timer) {
					ran = append(ran, tm.Arg)
					if tm.Arg == 1 {
						if !s.Cancel(victim) {
							t.Error("Cancel of a due timer not yet run = false")
						}
						staged := s.Schedule(Timer{Due: 0, Arg: 9})
						if !s.Cancel(staged) || s.Cancel(staged) {
							t.Error("Cancel of a staged timer must succeed exactly once")
						}
					}
				})
				if n != 2 || !slices.Equal(ran, []uint64{1, 3}) || s.Len() != 0 {
					t.Fatalf("Expire ran %d: %v, Len %d; want [1 3], Len 0", n, ran, s.Len())
				}
				checkInvariants(t, s)
			})

			t.Run("nested Expire does nothing", func(t *testing.T) {
				s := newSet(t, mode, DefaultTick)
				s.Schedule(Timer{Due: 1})
				s.Schedule(Timer{Due: 1})
				n := s.Expire(1, func(Timer) {
					if m := s.Expire(1, func(Timer) { t.Error("nested Expire ran a timer") }); m != 0 {
						t.Errorf("nested Expire = %d, want 0", m)
					}
				})
				if n != 2 {
					t.Fatalf("Expire = %d, want 2", n)
				}
			})

			t.Run("panicking callback leaves the set usable", func(t *testing.T) {
				s := newSet(t, mode, DefaultTick)
				s.Schedule(Timer{Due: 1, Arg: 1})
				s.Schedule(Timer{Due: 2, Arg: 2})
				func() {
					defer func() {
						if recover() == nil {
							t.Fatal("callback panic did not propagate")
						}
					}()
					s.Expire(5, func(tm Timer) {
						s.Schedule(Timer{Due: 3, Arg: 3})
						panic("boom")
					})
				}()
				checkInvariants(t, s) // staged timer queued, timerfd re-armed
				var ran []uint64
				s.Expire(5, func(tm Timer) { ran = append(ran, tm.Arg) })
				if !slices.Equal(ran, []uint64{2, 3}) {
					t.Fatalf("after the panic Expire ran %v, want [2 3]", ran)
				}
			})

			t.Run("callback closes the set", func(t *testing.T) {
				s := newSet(t, mode, DefaultTick)
				for range 3 {
					s.Schedule(Timer{Due: 1})
				}
				n := s.Expire(1, func(Timer) {
					if err := s.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
				if n != 1 || s.Len() != 0 {
					t.Fatalf("Expire after Close in callback ran %d, Len %d; want 1, 0", n, s.Len())
				}
			})

			t.Run("nil callback runs nothing", func(t *testing.T) {
				s := newSet(t, mode, DefaultTick)
				s.Schedule(Timer{Due: 1})
				if n := s.Expire(1, nil); n != 0 || s.Len() != 1 {
					t.Fatalf("Expire(nil) = %d, Len %d; want 0, 1", n, s.Len())
				}
			})
		})
	}
}

// cancelArg cancels the one scheduled timer carrying arg, found through the table.
func cancelArg(t *testing.T, s *Set, arg uint64) {
	t.Helper()
	for _, it := range s.tb.heap {
		if s.tb.entries[it.slot].t.Arg == arg {
			if !s.Cancel(s.tb.idOf(it.slot)) {
				t.Fatalf("Cancel of the timer with Arg %d failed", arg)
			}
			return
		}
	}
	t.Fatalf("no timer with Arg %d", arg)
}
