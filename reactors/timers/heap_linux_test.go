//go:build linux

package timers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// newSet creates a Set and closes it when the test ends.
func newSet(t testing.TB, mode Mode, tick time.Duration) *Set {
	t.Helper()
	s, err := New(mode, tick)
	if err != nil {
		t.Fatalf("New(%v, %v): %v", mode, tick, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// checkInvariants verifies the heap order, the index of every slot, the free list
// and, in Deadline mode outside Expire, that the timerfd is armed to the nearest
// deadline (or disarmed).
func checkInvariants(t *testing.T, s *Set) {
	t.Helper()
	tb := &s.tb
	for i := range tb.heap {
		it := &tb.heap[i]
		if i > 0 && it.less(&tb.heap[(i-1)/2]) {
			t.Fatalf("heap[%d] (due %d seq %d) is less than its parent", i, it.due, it.seq)
		}
		e := &tb.entries[it.slot]
		if e.state != slotQueued || int(e.pos) != i || e.t.Due != it.due || e.seq != it.seq {
			t.Fatalf("heap[%d] slot %d: entry state %d pos %d due %d seq %d, item due %d seq %d",
				i, it.slot, e.state, e.pos, e.t.Due, e.seq, it.due, it.seq)
		}
	}
	for i, slot := range tb.staged {
		if e := &tb.entries[slot]; e.state != slotStaged || int(e.pos) != i {
			t.Fatalf("staged[%d] slot %d: state %d pos %d", i, slot, e.state, e.pos)
		}
	}
	retired := 0
	for i := range tb.entries {
		if tb.entries[i].state == slotRetired {
			retired++
		}
	}
	free := 0
	for slot := tb.freeHead; len(tb.entries) > 0 && slot >= 0; slot = tb.entries[slot].pos {
		if tb.entries[slot].state != slotFree {
			t.Fatalf("free list holds slot %d in state %d", slot, tb.entries[slot].state)
		}
		if free++; free > len(tb.entries) {
			t.Fatal("free list has a cycle")
		}
	}
	if got, want := free+retired+len(tb.heap)+len(tb.staged), len(tb.entries); got != want {
		t.Fatalf("free %d + retired %d + queued %d + staged %d = %d slots, table has %d",
			free, retired, len(tb.heap), len(tb.staged), got, want)
	}
	if s.mode == Deadline && !s.expiring {
		var want int64
		if len(tb.heap) > 0 {
			want = max(tb.heap[0].due, 1)
		}
		if s.armed != want {
			t.Fatalf("timerfd armed to %d, nearest deadline wants %d", s.armed, want)
		}
	}
}

// modelTimer is one timer of the reference model.
type modelTimer struct {
	id     ID
	t      Timer
	seq    uint64
	staged bool // scheduled during the current Expire call
}

// model is the reference: a slice kept sorted by (Due, insertion order).
type model struct {
	live []modelTimer
	seq  uint64
}

func (m *model) schedule(id ID, t Timer, staged bool) {
	mt := modelTimer{id: id, t: t, seq: m.seq, staged: staged}
	m.seq++
	i, _ := slices.BinarySearchFunc(m.live, mt, func(a, b modelTimer) int {
		if a.t.Due != b.t.Due {
			return cmpInt(a.t.Due, b.t.Due)
		}
		return cmpInt(a.seq, b.seq)
	})
	m.live = slices.Insert(m.live, i, mt)
}

func cmpInt[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (m *model) cancel(id ID) bool {
	i := slices.IndexFunc(m.live, func(mt modelTimer) bool { return mt.id == id })
	if i < 0 {
		return false
	}
	m.live = slices.Delete(m.live, i, i+1)
	return true
}

// popDue removes and returns the first timer, in order, that Expire(now) must run
// next: not staged and due.
func (m *model) popDue(now int64) (modelTimer, bool) {
	for i, mt := range m.live {
		if mt.staged {
			continue
		}
		if mt.t.Due > now {
			return modelTimer{}, false
		}
		m.live = slices.Delete(m.live, i, i+1)
		return mt, true
	}
	return modelTimer{}, false
}

func (m *model) next() (int64, bool) {
	due, ok := int64(0), false
	for _, mt := range m.live {
		if !ok || mt.t.Due < due {
			due, ok = mt.t.Due, true
		}
	}
	return due, ok
}

// TestSetMatchesModel drives a Set and the sorted-slice model with the same seeded
// random operations — schedule with many ties, cancel live, stale and made-up IDs,
// expire with callbacks that schedule (also at now and in the past) and cancel —
// and requires the same results, the same firing order and unique, non-zero IDs.
func TestSetMatchesModel(t *testing.T) {
	for _, mode := range []Mode{Periodic, Deadline} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%v/seed=%d", mode, seed), func(t *testing.T) {
				runModel(t, mode, seed, 5000)
			})
		}
	}
}

func runModel(t *testing.T, mode Mode, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 0x7469_6d65_7273))
	s := newSet(t, mode, time.Hour) // Periodic: the tick plays no part here
	var (
		m       model
		issued  = map[ID]bool{}
		stale   []ID // IDs of timers that ran or were cancelled
		clock   = int64(1000)
		nextArg uint64
		highLen int
	)
	schedule := func(due int64, staged bool) {
		nextArg++
		tm := Timer{Due: due, Kind: uint16(rng.IntN(4)), Arg: nextArg}
		id := s.Schedule(tm)
		if id == 0 || issued[id] {
			t.Fatalf("Schedule(%+v) = %#x: zero or reused ID", tm, id)
		}
		issued[id] = true
		m.schedule(id, tm, staged)
		highLen = max(highLen, len(m.live))
	}
	cancelLive := func() {
		if len(m.live) == 0 {
			return
		}
		id := m.live[rng.IntN(len(m.live))].id
		if !s.Cancel(id) {
			t.Fatalf("Cancel(%#x) of a live timer = false", id)
		}
		m.cancel(id)
		stale = append(stale, id)
	}
	cancelStale := func() {
		if len(stale) == 0 {
			return
		}
		id := stale[rng.IntN(len(stale))]
		if s.Cancel(id) {
			t.Fatalf("Cancel(%#x) of a stale ID = true", id)
		}
	}
	cancelMadeUp := func() {
		var id ID
		switch rng.IntN(3) {
		case 0:
			id = 0
		case 1:
			id = ID(rng.Uint64())
		case 2: // a live slot under the next generation
			if len(m.live) == 0 {
				return
			}
			id = m.live[rng.IntN(len(m.live))].id + 1<<32
		}
		want := m.cancel(id)
		if got := s.Cancel(id); got != want {
			t.Fatalf("Cancel(%#x) of a made-up ID = %v, model %v", id, got, want)
		}
	}

	for op := 0; op < ops; op++ {
		switch r := rng.IntN(100); {
		case r < 40:
			schedule(clock+int64(rng.IntN(60))-5, false) // narrow range: many ties
		case r < 55:
			cancelLive()
		case r < 62:
			cancelStale()
		case r < 67:
			cancelMadeUp()
		default:
			clock += int64(rng.IntN(12))
			now := clock
			ran := 0
			got := s.Expire(now, func(tm Timer) {
				ran++
				want, ok := m.popDue(now)
				if !ok || want.t != tm {
					t.Fatalf("op %d: Expire(%d) ran %+v, model expects %+v (ok %v)", op, now, tm, want.t, ok)
				}
				stale = append(stale, want.id)
				checkInvariants(t, s)
				for k := rng.IntN(3); k > 0; k-- {
					switch rng.IntN(4) {
					case 0:
						schedule(now, true) // due now: must wait for the next call
					case 1:
						schedule(now-int64(rng.IntN(5)), true) // already overdue
					case 2:
						schedule(now+int64(rng.IntN(20)), true)
					case 3:
						cancelLive() // may hit a due timer not yet run, or a staged one
					}
				}
				if n, mn := s.Len(), len(m.live); n != mn {
					t.Fatalf("Len during Expire = %d, model %d", n, mn)
				}
				d, ok := s.Next()
				if md, mok := m.next(); d != md || ok != mok {
					t.Fatalf("Next during Expire = %d %v, model %d %v", d, ok, md, mok)
				}
			})
			if got != ran {
				t.Fatalf("Expire returned %d, callback ran %d times", got, ran)
			}
			if mt, ok := m.popDue(now); ok {
				t.Fatalf("Expire(%d) left due timer %+v", now, mt.t)
			}
			for i := range m.live {
				m.live[i].staged = false
			}
		}
		if n, mn := s.Len(), len(m.live); n != mn {
			t.Fatalf("op %d: Len = %d, model %d", op, n, mn)
		}
		d, ok := s.Next()
		if md, mok := m.next(); d != md || ok != mok {
			t.Fatalf("op %d: Next = %d %v, model %d %v", op, d, ok, md, mok)
		}
		checkInvariants(t, s)
		if len(s.tb.entries) > highLen {
			t.Fatalf("op %d: %d slots for at most %d live timers: freed slots are not reused",
				op, len(s.tb.entries), highLen)
		}
	}
	// Drain: everything left runs in order once time has passed it.
	far := int64(1 << 62)
	for s.Len() > 0 {
		s.Expire(far, func(tm Timer) {
			want, ok := m.popDue(far)
			if !ok || want.t != tm {
				t.Fatalf("drain ran %+v, model expects %+v (ok %v)", tm, want.t, ok)
			}
		})
	}
	if len(m.live) != 0 {
		t.Fatalf("set empty, model still holds %d timers", len(m.live))
	}
	checkInvariants(t, s)
}

// TestTiesAreFIFO checks that equal deadlines run in the order they were scheduled,
// whatever was scheduled and cancelled around them.
func TestTiesAreFIFO(t *testing.T) {
	s := newSet(t, Deadline, 0)
	var ids []ID
	for i := range 64 {
		ids = append(ids, s.Schedule(Timer{Due: 50, Arg: uint64(i)}))
		s.Schedule(Timer{Due: int64(2*i + 1)}) // odd deadlines, before and after 50
	}
	for i := 0; i < 64; i += 3 {
		s.Cancel(ids[i])
	}
	var got []uint64
	s.Expire(50, func(tm Timer) {
		if tm.Due == 50 {
			got = append(got, tm.Arg)
		}
	})
	var want []uint64
	for i := range 64 {
		if i%3 != 0 {
			want = append(want, uint64(i))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ties ran in order %v, want %v", got, want)
	}
}

// TestIDs checks that 0 and foreign IDs are refused, that a fired or cancelled
// timer's ID stays stale although its slot is reused, and that a slot whose
// generation is exhausted is retired rather than handed out under an old ID.
func TestIDs(t *testing.T) {
	s := newSet(t, Deadline, 0)
	if s.Cancel(0) {
		t.Fatal("Cancel(0) = true")
	}
	a := s.Schedule(Timer{Due: 10})
	if a == 0 {
		t.Fatal("Schedule returned 0")
	}
	if !s.Cancel(a) || s.Cancel(a) {
		t.Fatal("Cancel of a live ID must succeed exactly once")
	}
	b := s.Schedule(Timer{Due: 10})
	if uint32(b) != uint32(a) {
		t.Fatalf("slot not reused: ID %#x after cancelling %#x", b, a)
	}
	if b == a || s.Cancel(a) {
		t.Fatalf("reused slot gave old ID %#x a new life (new ID %#x)", a, b)
	}
	if n := s.Expire(10, func(Timer) {}); n != 1 || s.Cancel(b) {
		t.Fatalf("Expire ran %d; Cancel of the fired ID must be false", n)
	}

	// Exhaust the generation of slot 0: release must retire it.
	slot := int32(uint32(b) - 1)
	c := s.Schedule(Timer{Due: 10})
	if int32(uint32(c)-1) != slot {
		t.Fatalf("expected slot %d to be reused, got ID %#x", slot, c)
	}
	s.tb.entries[slot].gen = ^uint32(0) // pretend 2^32-1 timers used this slot
	last := s.tb.idOf(slot)
	if !s.Cancel(last) {
		t.Fatalf("Cancel(%#x) = false", last)
	}
	seen := map[ID]bool{}
	for range 8 {
		id := s.Schedule(Timer{Due: 20})
		if int32(uint32(id)-1) == slot {
			t.Fatalf("retired slot %d handed out again as %#x", slot, id)
		}
		if seen[id] || id == 0 {
			t.Fatalf("ID %#x zero or repeated", id)
		}
		seen[id] = true
	}
	checkInvariants(t, s)
}
