package slots

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// MaxCapacity is the largest capacity NewTable accepts. It keeps slot indices
// well inside the int32 Fd field of an epoll event (see PutRef).
const MaxCapacity = 1 << 24

// entry is one slot. gen is the generation of the current occupant, or of the
// last one while the slot is free; val is the occupant, nil while free.
// Writers (under Table.mu) order their stores so that a lock-free reader that
// sees gen, then val, then gen again unchanged has seen a consistent pair:
//
//	Alloc: gen.Store(next)  then val.Store(v)
//	Free:  val.Store(nil)   (gen unchanged until the next Alloc)
type entry[T any] struct {
	gen atomic.Uint32
	val atomic.Pointer[T]
}

// Table is a fixed-capacity table of sources of type T, each named by a Ref.
// Create it with NewTable; the zero Table has capacity 0 and every Alloc
// returns ErrFull.
//
// Invariants: a slot is either free (value nil) or live (value non-nil, named
// by exactly one Ref: its slot and current generation); Len is the number of
// live slots; the table never allocates after NewTable.
type Table[T any] struct {
	ents []entry[T]
	live atomic.Int64 // number of live slots, read lock-free by Len

	mu   sync.Mutex
	free []uint32 // LIFO stack of free slot indices; guarded by mu
}

// NewTable returns a table of capacity slots, all preallocated. It returns an
// error if capacity is not in [1, MaxCapacity].
func NewTable[T any](capacity int) (*Table[T], error) {
	if capacity <= 0 || capacity > MaxCapacity {
		return nil, fmt.Errorf("slots: capacity %d out of range [1, %d]", capacity, MaxCapacity)
	}
	t := &Table[T]{
		ents: make([]entry[T], capacity),
		free: make([]uint32, capacity),
	}
	// Top of the stack is the end of the slice: push in reverse so that slot 0
	// is allocated first, like the lowest free fd.
	for i := range t.free {
		t.free[i] = uint32(capacity - 1 - i)
	}
	return t, nil
}

// Alloc stores v in a free slot and returns its new Ref. The slot is the one
// freed most recently (LIFO); its generation is bumped (skipping 0 on wrap), so
// every Ref previously issued for the slot is stale from now on.
//
// It returns an error wrapping ErrFull when no slot is free, or ErrNilValue if
// v is nil. Alloc takes the table's mutex; it never allocates memory.
func (t *Table[T]) Alloc(v *T) (Ref, error) {
	if v == nil {
		return 0, fmt.Errorf("slots: Alloc: %w", ErrNilValue)
	}
	t.mu.Lock()
	n := len(t.free)
	if n == 0 {
		t.mu.Unlock()
		return 0, fmt.Errorf("%w (capacity %d)", ErrFull, len(t.ents))
	}
	slot := t.free[n-1]
	t.free = t.free[:n-1]
	e := &t.ents[slot]
	gen := e.gen.Load() + 1
	if gen == 0 {
		gen = 1
	}
	e.gen.Store(gen) // before val: see entry
	e.val.Store(v)
	t.live.Add(1)
	t.mu.Unlock()
	return MakeRef(slot, gen), nil
}

// Get returns the value named by r, or false if r is stale (its slot was freed,
// or reallocated under a newer generation), out of range, or the zero Ref.
// It is lock-free (three atomic loads) and safe concurrently with Alloc and
// Free on other goroutines.
//
// What a true answer guarantees: at one instant during the call, r was the live
// occupant of its slot and the returned pointer was its value. It does not
// guarantee that r is still live when Get returns: another goroutine may Free r
// right after. That is why only the owner of a source (the one loop or worker
// that holds it) may Free it; any other goroutine must treat a successful Get as
// a hint and revalidate on the owner. A false answer is final for r: a freed
// Ref never becomes live again (short of 2^32-1 reallocations of its slot, when
// the generation wraps).
func (t *Table[T]) Get(r Ref) (*T, bool) {
	slot, gen := r.Slot(), r.Gen()
	if gen == 0 || uint64(slot) >= uint64(len(t.ents)) {
		return nil, false
	}
	e := &t.ents[slot]
	// gen, val, gen: Alloc stores gen before val and Free clears val, so if both
	// gen loads match, val was loaded while r was the slot's occupant (or free).
	if e.gen.Load() != gen {
		return nil, false
	}
	v := e.val.Load()
	if v == nil || e.gen.Load() != gen {
		return nil, false
	}
	return v, true
}

// Free releases the slot named by r and reports whether it did. It returns
// false, and changes nothing, if r is stale, out of range or the zero Ref, so a
// double free is harmless. The slot's generation is left as is until the next
// Alloc bumps it; Get(r) fails from the moment Free returns.
func (t *Table[T]) Free(r Ref) bool {
	slot, gen := r.Slot(), r.Gen()
	if gen == 0 || uint64(slot) >= uint64(len(t.ents)) {
		return false
	}
	e := &t.ents[slot]
	t.mu.Lock()
	if e.gen.Load() != gen || e.val.Load() == nil {
		t.mu.Unlock()
		return false
	}
	e.val.Store(nil)
	t.free = append(t.free, slot) // never grows: len(free) < cap(free) here
	t.live.Add(-1)
	t.mu.Unlock()
	return true
}

// Len returns the number of live slots. It is lock-free; under concurrent
// Alloc and Free it is a snapshot.
func (t *Table[T]) Len() int { return int(t.live.Load()) }

// Cap returns the fixed capacity of the table.
func (t *Table[T]) Cap() int { return len(t.ents) }

// Slot returns the current occupant of slot index slot, whatever its
// generation, and false if the slot is free or out of range. It exists only for
// the "fd-number identity" mutant, which routes events by number and ignores
// generations; correct reactors use Get. Lock-free, like Get.
func (t *Table[T]) Slot(slot uint32) (Ref, *T, bool) {
	if uint64(slot) >= uint64(len(t.ents)) {
		return 0, nil, false
	}
	e := &t.ents[slot]
	for {
		gen := e.gen.Load()
		v := e.val.Load()
		if e.gen.Load() != gen {
			continue // reallocated between the loads: read again
		}
		if v == nil {
			return 0, nil, false
		}
		return MakeRef(slot, gen), v, true
	}
}

// Range calls fn for each live entry, in slot order, until fn returns false.
// It is meant for shutdown. It takes no lock, so fn may call Free (or Alloc);
// an entry allocated or freed concurrently with Range may or may not be
// visited, and each visited (Ref, value) pair was live at the moment it was
// read. Range costs O(Cap()).
func (t *Table[T]) Range(fn func(Ref, *T) bool) {
	if fn == nil {
		return
	}
	for i := range t.ents {
		if r, v, ok := t.Slot(uint32(i)); ok && !fn(r, v) {
			return
		}
	}
}
