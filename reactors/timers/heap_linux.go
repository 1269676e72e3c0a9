//go:build linux

package timers

// This file holds the data structure of a Set, with no system calls: a slot table
// with generations (what an ID names), an indexed binary min-heap of the queued
// slots, and the staging list of slots scheduled while Expire runs.

// ID identifies one scheduled timer. It packs the timer's slot and the slot's
// generation: generation<<32 | (slot+1). The low half is never 0, so 0 is never a
// valid ID. A slot's generation is bumped each time its timer fires or is
// cancelled, and a slot whose generation would wrap is retired instead of reused,
// so an ID is never reused for a different timer: once its timer has fired or been
// cancelled, an ID is stale forever and [Set.Cancel] returns false for it.
type ID uint64

// Timer is one deadline and the payload the owner loop interprets when it fires.
type Timer struct {
	// Due is the deadline in CLOCK_MONOTONIC nanoseconds (the clock of [Now]).
	// The timer is due when Due <= now. Any value is accepted: a Due in the past,
	// zero or negative is simply due at the next Expire.
	Due int64
	// Kind is opaque to this package: the loop's tag for what to do.
	Kind uint16
	// Arg is opaque to this package, for instance a connection reference
	// (slot and generation) that the loop validates before acting on it.
	Arg uint64
}

// Slot states. A slot moves free → queued → free (fired or cancelled), or, when
// scheduled while Expire runs, free → staged → queued (at the end of Expire) → free.
// pos means something different in each state.
const (
	slotFree    uint8 = iota // not scheduled; pos is the next free slot, or -1
	slotQueued               // in the heap; pos is its heap index
	slotStaged               // scheduled during Expire; pos is its index in staged
	slotRetired              // generation exhausted; never used again
)

// maxSlots bounds the slot table so that slot indices fit in pos (int32) and
// slot+1 fits in the low half of an ID.
const maxSlots = 1<<31 - 1

// entry is one slot of the table.
type entry struct {
	t     Timer
	seq   uint64 // insertion order: breaks ties among equal Due (FIFO)
	gen   uint32 // generation; the high half of the slot's current ID
	pos   int32  // see the slot states
	state uint8
}

// item is one heap element. It copies the sort key out of the entry so that sifting
// compares adjacent memory and touches entries only to update their heap index.
type item struct {
	due  int64
	seq  uint64
	slot int32
}

// less orders items by deadline, then by insertion order.
func (a *item) less(b *item) bool {
	return a.due < b.due || (a.due == b.due && a.seq < b.seq)
}

// table is the slot table, the heap and the staging list. The zero table is empty
// and ready to use.
type table struct {
	entries  []entry
	heap     []item  // min-heap by (due, seq) of the queued slots
	staged   []int32 // slots scheduled during Expire, not yet in the heap
	freeHead int32   // first free slot, -1 if none; valid once entries is non-nil
	seq      uint64  // next insertion sequence number
}

// idOf returns the current ID of slot.
func (tb *table) idOf(slot int32) ID {
	return ID(uint64(tb.entries[slot].gen)<<32 | uint64(slot+1))
}

// alloc takes a free slot, reusing released ones first. ok is false only when the
// table is full.
func (tb *table) alloc() (slot int32, ok bool) {
	if len(tb.entries) > 0 && tb.freeHead >= 0 {
		slot = tb.freeHead
		tb.freeHead = tb.entries[slot].pos
		return slot, true
	}
	if len(tb.entries) >= maxSlots {
		return 0, false
	}
	if len(tb.entries) == 0 {
		tb.freeHead = -1
	}
	tb.entries = append(tb.entries, entry{})
	return int32(len(tb.entries) - 1), true
}

// release returns slot to the free list under a new generation, which makes its
// old ID stale. A slot whose generation wraps is retired rather than reused.
func (tb *table) release(slot int32) {
	e := &tb.entries[slot]
	e.t = Timer{}
	e.gen++
	if e.gen == 0 {
		e.state = slotRetired
		return
	}
	e.state = slotFree
	e.pos = tb.freeHead
	tb.freeHead = slot
}

// lookup returns the slot of a live timer (queued or staged) named by id.
func (tb *table) lookup(id ID) (slot int32, ok bool) {
	low := uint32(id)
	if low == 0 || uint64(low) > uint64(len(tb.entries)) {
		return 0, false
	}
	slot = int32(low - 1)
	e := &tb.entries[slot]
	if e.gen != uint32(id>>32) || (e.state != slotQueued && e.state != slotStaged) {
		return 0, false
	}
	return slot, true
}

// add fills a freshly allocated slot with t and either queues it in the heap or,
// if staged, appends it to the staging list.
func (tb *table) add(slot int32, t Timer, staged bool) {
	e := &tb.entries[slot]
	e.t = t
	e.seq = tb.seq
	tb.seq++
	if staged {
		e.state = slotStaged
		e.pos = int32(len(tb.staged))
		tb.staged = append(tb.staged, slot)
		return
	}
	tb.push(slot)
}

// push queues slot in the heap. O(log n).
func (tb *table) push(slot int32) {
	e := &tb.entries[slot]
	e.state = slotQueued
	tb.heap = append(tb.heap, item{due: e.t.Due, seq: e.seq, slot: slot})
	tb.up(len(tb.heap) - 1)
}

// unqueue removes the slot at heap index i from the heap (not from the table).
// O(log n).
func (tb *table) unqueue(i int) {
	last := len(tb.heap) - 1
	if i != last {
		tb.heap[i] = tb.heap[last]
		tb.entries[tb.heap[i].slot].pos = int32(i)
	}
	tb.heap = tb.heap[:last]
	if i < last {
		// The moved item may belong above or below i.
		if !tb.down(i) {
			tb.up(i)
		}
	}
}

// unstage removes the staged slot at staging index i (order there is irrelevant:
// the heap orders by seq). O(1).
func (tb *table) unstage(i int) {
	last := len(tb.staged) - 1
	if i != last {
		tb.staged[i] = tb.staged[last]
		tb.entries[tb.staged[i]].pos = int32(i)
	}
	tb.staged = tb.staged[:last]
}

// unstageAll moves every staged slot into the heap.
func (tb *table) unstageAll() {
	for _, slot := range tb.staged {
		tb.push(slot)
	}
	tb.staged = tb.staged[:0]
}

// up moves the item at heap index i towards the root until its parent is not
// greater, keeping entry positions in step.
func (tb *table) up(i int) {
	h := tb.heap
	it := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !it.less(&h[p]) {
			break
		}
		h[i] = h[p]
		tb.entries[h[i].slot].pos = int32(i)
		i = p
	}
	h[i] = it
	tb.entries[it.slot].pos = int32(i)
}

// down moves the item at heap index i towards the leaves until no child is
// smaller, keeping entry positions in step. It reports whether the item moved.
func (tb *table) down(i int) bool {
	h := tb.heap
	n := len(h)
	start := i
	it := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].less(&h[c]) {
			c = r
		}
		if !h[c].less(&it) {
			break
		}
		h[i] = h[c]
		tb.entries[h[i].slot].pos = int32(i)
		i = c
	}
	h[i] = it
	tb.entries[it.slot].pos = int32(i)
	return i > start
}

// remove takes the live slot out of the heap or the staging list and releases it.
func (tb *table) remove(slot int32) {
	e := &tb.entries[slot]
	switch e.state {
	case slotQueued:
		tb.unqueue(int(e.pos))
	case slotStaged:
		tb.unstage(int(e.pos))
	}
	tb.release(slot)
}

// len is the number of live timers, queued or staged.
func (tb *table) len() int { return len(tb.heap) + len(tb.staged) }

// next returns the nearest deadline among live timers. Staged timers exist only
// while Expire runs; they are scanned linearly.
func (tb *table) next() (due int64, ok bool) {
	if len(tb.heap) > 0 {
		due, ok = tb.heap[0].due, true
	}
	for _, slot := range tb.staged {
		if d := tb.entries[slot].t.Due; !ok || d < due {
			due, ok = d, true
		}
	}
	return due, ok
}

// reset drops every timer. IDs issued before stay stale: lookup finds no slot for
// them because the table is empty afterwards.
func (tb *table) reset() {
	*tb = table{seq: tb.seq}
}
