package readyq

import "github.com/reactorlab/reactorlab/reactors/slots"

// minRing is the initial ring size (a power of two); maxInitialRing caps the
// ring preallocated from slotCapacity (it grows on demand beyond that).
const (
	minRing        = 16
	maxInitialRing = 4096
)

// Queue is a FIFO of slots.Ref with dedup and O(1) revocation.
//
// Representation: entries live in a power-of-two ring indexed by an absolute,
// ever-increasing position (head <= position < tail). pos[slot] is 1 + the
// position of the slot's one live entry, or 0 if the slot is not queued. An
// entry is live iff pos[its slot] points at it; every other entry is dead
// (superseded by a later Push for the slot, or revoked by Remove) and is
// skipped by Pop. Pointing at a position rather than recording only the
// generation makes the order exact: a Ref removed and then pushed again is
// served at its new place, never at the place of its dead entry.
type Queue struct {
	ring       []slots.Ref
	head, tail uint64   // absolute positions; ring index is position & (len(ring)-1)
	pos        []uint64 // per slot: 1 + position of the live entry, 0 = not queued
	live       int
	skipped    uint64
}

// New returns an empty queue for sources whose slot index is below
// slotCapacity (the slots.Table capacity). Per-slot state is preallocated; a
// slotCapacity below 0 is treated as 0 and one above slots.MaxCapacity as
// slots.MaxCapacity, so New never fails.
func New(slotCapacity int) *Queue {
	slotCapacity = min(max(slotCapacity, 0), slots.MaxCapacity)
	n := minRing
	for n < slotCapacity && n < maxInitialRing {
		n *= 2
	}
	return &Queue{
		ring: make([]slots.Ref, n),
		pos:  make([]uint64, slotCapacity),
	}
}

// Push appends r at the tail and reports whether it did. It returns false,
// changing nothing, if r is already queued (dedup), and also if r cannot be a
// source of this queue: the zero generation, or a slot >= the slotCapacity
// given to New. If r's slot is queued under another generation, that entry is
// superseded (it will be skipped) and r takes its place at the tail. Push
// allocates only when the ring must grow.
func (q *Queue) Push(r slots.Ref) bool {
	slot := uint64(r.Slot())
	if r.Gen() == 0 || slot >= uint64(len(q.pos)) {
		return false
	}
	if p := q.pos[slot]; p != 0 {
		if q.ring[(p-1)&uint64(len(q.ring)-1)] == r {
			return false
		}
		q.live-- // superseded; counted again below
	}
	if q.tail-q.head == uint64(len(q.ring)) {
		q.grow()
	}
	q.ring[q.tail&uint64(len(q.ring)-1)] = r
	q.tail++
	q.pos[slot] = q.tail // 1 + position
	q.live++
	return true
}

// grow doubles the ring, keeping every entry at the same absolute position.
// The ring holds live entries (at most one per slot) plus dead ones not yet
// reached by Pop; the dead are bounded by the supersedes and Removes since Pop
// last passed them, so in a loop that drains the queue the ring stops growing.
func (q *Queue) grow() {
	old := q.ring
	nr := make([]slots.Ref, 2*len(old))
	om, nm := uint64(len(old)-1), uint64(len(nr)-1)
	for p := q.head; p != q.tail; p++ {
		nr[p&nm] = old[p&om]
	}
	q.ring = nr
}

// Pop removes and returns the oldest live Ref, skipping (and counting) dead
// entries on the way; false if no live entry is left. After Pop the source is
// no longer queued: a reactor whose source still has work after its turn
// Pushes it again, which puts it behind every other queued source.
func (q *Queue) Pop() (slots.Ref, bool) {
	mask := uint64(len(q.ring) - 1)
	for q.head != q.tail {
		p := q.head
		r := q.ring[p&mask]
		q.head++
		if slot := r.Slot(); q.pos[slot] == p+1 {
			q.pos[slot] = 0
			q.live--
			return r, true
		}
		q.skipped++
	}
	return 0, false
}

// Remove revokes the queued entry of slot, if any: the source in that slot was
// closed, and its entry will be skipped by Pop. O(1). A slot that is not
// queued, or out of range, is ignored.
func (q *Queue) Remove(slot uint32) {
	if uint64(slot) >= uint64(len(q.pos)) || q.pos[slot] == 0 {
		return
	}
	q.pos[slot] = 0
	q.live--
}

// Queued reports whether r itself (slot and generation) is queued and live.
func (q *Queue) Queued(r slots.Ref) bool {
	slot := uint64(r.Slot())
	if r.Gen() == 0 || slot >= uint64(len(q.pos)) {
		return false
	}
	p := q.pos[slot]
	return p != 0 && q.ring[(p-1)&uint64(len(q.ring)-1)] == r
}

// Len returns the number of live entries: the sources Pop will return if
// nothing else changes.
func (q *Queue) Len() int { return q.live }

// Skipped returns the number of dead entries (superseded or removed) that Pop
// has dropped so far.
func (q *Queue) Skipped() uint64 { return q.skipped }
