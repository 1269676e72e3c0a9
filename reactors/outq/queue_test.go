package outq

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		l     Limits
		field string // "" = valid
	}{
		{"default", DefaultLimits(), ""},
		{"unbounded", Limits{High: 10, Low: 5}, ""},
		{"high equals cap", Limits{High: 10, Low: 0, HardCap: 10}, ""},
		{"negative high", Limits{High: -1, Low: 0, HardCap: 10}, "High = -1"},
		{"negative low", Limits{High: 10, Low: -1, HardCap: 10}, "Low = -1"},
		{"negative cap", Limits{High: 10, Low: 1, HardCap: -5}, "HardCap = -5"},
		{"low equals high", Limits{High: 10, Low: 10, HardCap: 20}, "Low = 10"},
		{"low above high", Limits{High: 10, Low: 11, HardCap: 20}, "Low = 11"},
		{"high above cap", Limits{High: 30, Low: 10, HardCap: 20}, "High = 30"},
		{"zero", Limits{}, "Low = 0"},
	} {
		err := tc.l.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: Validate(%+v) = %v, want nil", tc.name, tc.l, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Validate(%+v) = %v, want an error naming %q", tc.name, tc.l, err, tc.field)
		}
	}
	if d := DefaultLimits(); d.High != 1<<20 || d.Low != 256<<10 || d.HardCap != 8<<20 {
		t.Errorf("DefaultLimits() = %+v", d)
	}
}

func TestNewDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		q := New(DefaultLimits())
		if !q.Empty() || q.Paused() || q.Pending() == nil && q.Len() != 0 {
			t.Fatal("new queue not empty")
		}
	})
	if allocs != 0 {
		t.Errorf("New allocates %v times", allocs)
	}
}

// TestHysteresis steps Len through the watermarks (Low 4, High 8) and checks
// Paused after each step.
func TestHysteresis(t *testing.T) {
	q := New(Limits{High: 8, Low: 4, HardCap: 16})
	for i, st := range []struct {
		appendN, consumeN int
		wantLen           int
		wantPaused        bool
	}{
		{appendN: 7, wantLen: 7, wantPaused: false},  // below high
		{appendN: 1, wantLen: 8, wantPaused: true},   // reaches high: pause
		{consumeN: 3, wantLen: 5, wantPaused: true},  // between low and high: stay paused
		{appendN: 2, wantLen: 7, wantPaused: true},   // still between
		{consumeN: 2, wantLen: 5, wantPaused: true},  // still above low
		{consumeN: 1, wantLen: 4, wantPaused: false}, // at low: resume
		{appendN: 3, wantLen: 7, wantPaused: false},  // between, rising: stay running
		{appendN: 5, wantLen: 12, wantPaused: true},  // above high
		{consumeN: 12, wantLen: 0, wantPaused: false},
		{appendN: 9, wantLen: 9, wantPaused: true},
	} {
		if st.appendN > 0 {
			if err := q.Append(make([]byte, st.appendN)); err != nil {
				t.Fatalf("step %d: Append(%d): %v", i, st.appendN, err)
			}
		}
		q.Consume(st.consumeN)
		if q.Len() != st.wantLen || q.Paused() != st.wantPaused {
			t.Fatalf("step %d: Len %d Paused %v, want %d %v", i, q.Len(), q.Paused(), st.wantLen, st.wantPaused)
		}
	}
	q.Release()
	if q.Len() != 0 || q.Paused() || cap(q.buf) != 0 {
		t.Errorf("after Release: Len %d Paused %v cap %d", q.Len(), q.Paused(), cap(q.buf))
	}
}

func TestHardCap(t *testing.T) {
	q := New(Limits{High: 8, Low: 4, HardCap: 16})
	if err := q.Append(bytes.Repeat([]byte{'a'}, 10)); err != nil {
		t.Fatal(err)
	}
	err := q.Append(bytes.Repeat([]byte{'b'}, 7))
	if !errors.Is(err, ErrHardCap) {
		t.Fatalf("Append over cap: err = %v, want ErrHardCap", err)
	}
	for _, want := range []string{"10 pending", "7 appended", "16"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if q.Len() != 10 || !bytes.Equal(q.Pending(), bytes.Repeat([]byte{'a'}, 10)) {
		t.Errorf("refused Append changed the queue: %q", q.Pending())
	}
	if q.Reserve(7) != nil || q.Len() != 10 {
		t.Errorf("Reserve over cap was not refused (Len %d)", q.Len())
	}
	if err := q.Append(bytes.Repeat([]byte{'c'}, 6)); err != nil {
		t.Errorf("Append up to exactly the cap: %v", err)
	}
	if q.Len() != 16 {
		t.Errorf("Len = %d, want 16", q.Len())
	}
	// Unbounded: HardCap 0.
	u := New(Limits{High: 8, Low: 4})
	if err := u.Append(make([]byte, 1<<20)); err != nil {
		t.Errorf("unbounded Append: %v", err)
	}
}

func TestReserve(t *testing.T) {
	q := New(Limits{High: 1 << 10, Low: 1 << 8, HardCap: 1 << 12})
	q.Append([]byte("head|"))
	b := q.Reserve(5)
	if len(b) != 5 {
		t.Fatalf("Reserve(5) len = %d", len(b))
	}
	copy(b, "frame")
	q.Append([]byte("|tail"))
	if got := string(q.Pending()); got != "head|frame|tail" {
		t.Errorf("Pending = %q", got)
	}
	if cap(b) != 5 {
		t.Errorf("Reserve slice cap = %d, want 5 (appending to it must not overwrite the queue)", cap(b))
	}
	if q.Reserve(-1) != nil {
		t.Error("Reserve(-1) != nil")
	}
	if b := q.Reserve(0); len(b) != 0 {
		t.Errorf("Reserve(0) len = %d", len(b))
	}
	if q.Len() != 15 {
		t.Errorf("Len = %d, want 15", q.Len())
	}
	// Reserve counts toward the watermark at once.
	p := New(Limits{High: 8, Low: 4, HardCap: 16})
	p.Reserve(8)
	if !p.Paused() {
		t.Error("Reserve up to High did not pause")
	}
}

func TestConsumeClamps(t *testing.T) {
	q := New(DefaultLimits())
	q.Consume(5) // empty: no panic
	q.Append([]byte("abc"))
	q.Consume(-1)
	if q.Len() != 3 {
		t.Errorf("Consume(-1) changed Len to %d", q.Len())
	}
	q.Consume(100)
	if !q.Empty() || q.off != 0 {
		t.Errorf("Consume past Len: Len %d off %d", q.Len(), q.off)
	}
}

// TestRandomOpsMatchBuffer drives a Queue and a bytes.Buffer with the same
// random appends, reserves and consumes; the pending bytes must always match,
// across rewinds, compactions and growth.
func TestRandomOpsMatchBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const hardCap = 32 << 10
	q := New(Limits{High: 16 << 10, Low: 4 << 10, HardCap: hardCap})
	var ref bytes.Buffer
	var next byte
	fill := func(p []byte) {
		for i := range p {
			p[i] = next
			next++
		}
	}
	compactions := 0
	for i := range 100000 {
		switch op := rng.IntN(10); {
		case op < 4:
			p := make([]byte, rng.IntN(1500))
			fill(p)
			err := q.Append(p)
			if ref.Len()+len(p) > hardCap {
				if !errors.Is(err, ErrHardCap) {
					t.Fatalf("op %d: Append over cap: %v", i, err)
				}
				next -= byte(len(p))
				continue
			}
			if err != nil {
				t.Fatalf("op %d: Append: %v", i, err)
			}
			ref.Write(p)
		case op < 5:
			n := rng.IntN(200)
			b := q.Reserve(n)
			if b == nil {
				continue
			}
			fill(b)
			ref.Write(b)
		default:
			n := rng.IntN(2000)
			offBefore := q.off
			q.Consume(n)
			ref.Next(n)
			if q.off < offBefore && q.Len() > 0 {
				compactions++
			}
		}
		if !bytes.Equal(q.Pending(), ref.Bytes()) {
			t.Fatalf("op %d: Pending (%d bytes) differs from the reference (%d bytes)", i, q.Len(), ref.Len())
		}
	}
	if compactions == 0 {
		t.Error("no compaction exercised")
	}
}

// TestSteadyStateZeroAlloc: once the buffer has grown to the working set,
// Append/Reserve/Consume cycles allocate nothing.
func TestSteadyStateZeroAlloc(t *testing.T) {
	q := New(DefaultLimits())
	frame := make([]byte, 64)
	cycle := func() {
		for range 100 {
			if err := q.Append(frame); err != nil {
				t.Fatal(err)
			}
		}
		copy(q.Reserve(32), frame)
		q.Consume(1000) // partial
		for range 50 {
			q.Append(frame)
		}
		q.Consume(q.Len() - 10) // nearly all
		q.Consume(q.Len())      // empty: rewinds
	}
	for range 10 {
		cycle()
	}
	if a := testing.AllocsPerRun(1000, cycle); a != 0 {
		t.Errorf("steady-state cycle allocates %v times", a)
	}
}

func BenchmarkAppendConsume(b *testing.B) {
	q := New(DefaultLimits())
	frame := make([]byte, 64)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		q.Append(frame)
		if q.Len() >= 16<<10 {
			q.Consume(q.Len())
		}
	}
}

// Detach hands out the buffer of a drained queue only; Attach gives a
// buffer to a queue without one; the bytes queued after a swap come out
// intact, and no buffer is shared between two queues.
func TestDetachAttach(t *testing.T) {
	a, b := New(DefaultLimits()), New(DefaultLimits())
	if got := a.Detach(); got != nil {
		t.Fatalf("Detach of a queue that never had a buffer = %d bytes cap, want nil", cap(got))
	}
	if err := a.Append([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := a.Detach(); got != nil {
		t.Fatal("Detach took the buffer of a queue with pending bytes")
	}
	if string(a.Pending()) != "hello" {
		t.Fatalf("pending %q after a refused Detach", a.Pending())
	}
	a.Consume(5)
	buf := a.Detach()
	if buf == nil || len(buf) != 0 || cap(buf) < 5 {
		t.Fatalf("Detach of a drained queue = len %d cap %d", len(buf), cap(buf))
	}
	if !a.Empty() || a.Len() != 0 {
		t.Fatal("a detached queue is not empty")
	}
	if !b.Attach(buf) {
		t.Fatal("Attach to a queue without a buffer refused")
	}
	if a.Attach(make([]byte, 3)) != true || a.Attach(make([]byte, 3)) {
		t.Fatal("Attach: a queue took a second buffer over its own")
	}
	if err := b.Append([]byte("world")); err != nil {
		t.Fatal(err)
	}
	if err := a.Append([]byte("other")); err != nil {
		t.Fatal(err)
	}
	if string(b.Pending()) != "world" || string(a.Pending()) != "other" {
		t.Fatalf("after the swap: a %q, b %q", a.Pending(), b.Pending())
	}
	if &b.Pending()[0] != &buf[:1][0] {
		t.Error("b did not use the attached buffer")
	}
}
