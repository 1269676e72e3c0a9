//go:build linux

package timers

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"periodic", Periodic, true},
		{"deadline", Deadline, true},
		{"", 0, false},
		{"Periodic", 0, false},
		{"deadline ", 0, false},
		{"tick", 0, false},
	} {
		got, err := ParseMode(tc.in)
		if tc.ok {
			if err != nil || got != tc.want || got.String() != tc.in {
				t.Errorf("ParseMode(%q) = %v, %v; want %v round-tripping", tc.in, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrUnknownMode) || got != 0 {
			t.Errorf("ParseMode(%q) = %v, %v; want 0 and ErrUnknownMode", tc.in, got, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "periodic, deadline") || !strings.Contains(msg, `"`+tc.in+`"`) {
			t.Errorf("ParseMode(%q) error %q must quote the input and list the accepted modes", tc.in, msg)
		}
	}
	for _, m := range []Mode{0, 3, 255} {
		if got, want := m.String(), "Mode("; !strings.HasPrefix(got, want) {
			t.Errorf("Mode(%d).String() = %q", uint8(m), got)
		}
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		mode    Mode
		tick    time.Duration
		want    error
		mention []string // substrings the error must contain
	}{
		{Periodic, 0, ErrInvalidTick, []string{"tick", "0s"}},
		{Periodic, -time.Millisecond, ErrInvalidTick, []string{"tick", "-1ms"}},
		{0, time.Millisecond, ErrUnknownMode, []string{"Mode(0)"}},
		{Deadline + 1, time.Millisecond, ErrUnknownMode, []string{"Mode(3)"}},
	} {
		s, err := New(tc.mode, tc.tick)
		if !errors.Is(err, tc.want) || s != nil {
			t.Errorf("New(%v, %v) = %v, %v; want nil, %v", tc.mode, tc.tick, s, err, tc.want)
			continue
		}
		for _, sub := range tc.mention {
			if !strings.Contains(err.Error(), sub) {
				t.Errorf("New(%v, %v) error %q does not mention %q", tc.mode, tc.tick, err, sub)
			}
		}
	}
	// Deadline ignores the tick, whatever it is.
	for _, tick := range []time.Duration{0, -1, time.Hour} {
		s := newSet(t, Deadline, tick)
		if s.Mode() != Deadline || s.Tick() != 0 || s.Fd() < 0 {
			t.Errorf("New(Deadline, %v): mode %v tick %v fd %d", tick, s.Mode(), s.Tick(), s.Fd())
		}
	}
	if s := newSet(t, Periodic, DefaultTick); s.Tick() != time.Millisecond || s.Mode() != Periodic {
		t.Errorf("New(Periodic, DefaultTick): mode %v tick %v", s.Mode(), s.Tick())
	}
}

func TestClose(t *testing.T) {
	for _, mode := range []Mode{Periodic, Deadline} {
		s, err := New(mode, DefaultTick)
		if err != nil {
			t.Fatal(err)
		}
		id := s.Schedule(Timer{Due: 1})
		s.Schedule(Timer{Due: 2})
		for i := range 2 {
			if err := s.Close(); err != nil {
				t.Fatalf("%v: Close #%d: %v", mode, i+1, err)
			}
		}
		if s.Fd() != -1 || s.Len() != 0 || s.Cancel(id) || s.Acknowledge() != 0 {
			t.Fatalf("%v: after Close: Fd %d, Len %d, or Cancel/Acknowledge succeeded", mode, s.Fd(), s.Len())
		}
		if _, ok := s.Next(); ok {
			t.Fatalf("%v: Next after Close found a deadline", mode)
		}
		if got := s.Schedule(Timer{Due: 1}); got != 0 {
			t.Fatalf("%v: Schedule after Close = %#x, want 0", mode, got)
		}
		if n := s.Expire(1<<62, func(Timer) { t.Error("ran a timer after Close") }); n != 0 {
			t.Fatalf("%v: Expire after Close = %d", mode, n)
		}
		if s.Mode() != mode || s.Err() != nil {
			t.Fatalf("%v: after Close Mode %v, Err %v", mode, s.Mode(), s.Err())
		}
	}
}

func TestNow(t *testing.T) {
	a := Now()
	b := Now()
	if a <= 0 || b < a {
		t.Fatalf("Now() = %d then %d: want positive and non-decreasing", a, b)
	}
	if n := testing.AllocsPerRun(100, func() { Now() }); n != 0 {
		t.Fatalf("Now allocates %v times per call", n)
	}
}

// TestSteadyStateAllocs: once the set has held as many timers as it holds now,
// scheduling, cancelling, expiring and acknowledging allocate nothing — in Deadline
// mode including the timerfd_settime of every re-arm.
func TestSteadyStateAllocs(t *testing.T) {
	for _, mode := range []Mode{Periodic, Deadline} {
		s := newSet(t, mode, time.Hour)
		for i := range 100 {
			s.Schedule(Timer{Due: int64(1_000_000 + i)})
		}
		var due int64
		fn := func(Timer) {}
		for name, op := range map[string]func(){
			"schedule+cancel nearest": func() { s.Cancel(s.Schedule(Timer{Due: 1})) },
			"schedule+cancel far":     func() { s.Cancel(s.Schedule(Timer{Due: 1 << 40})) },
			"schedule+expire": func() {
				due++
				s.Schedule(Timer{Due: due})
				s.Expire(due, fn)
			},
			"acknowledge": func() { s.Acknowledge() },
		} {
			op() // warm up: grow the slices once
			if n := testing.AllocsPerRun(1000, op); n != 0 {
				t.Errorf("%v %s: %v allocs per op", mode, name, n)
			}
		}
		if s.Len() != 100 || s.Err() != nil {
			t.Fatalf("%v: Len %d, Err %v after the runs", mode, s.Len(), s.Err())
		}
	}
}
