// Package slots is the table that names every source of a reactor (connection,
// listener, eventfd, timerfd) by a (slot, generation) pair, so that an event or a
// result that outlives its source is recognised as stale and dropped.
//
// A file descriptor number is reused by the kernel as soon as it is closed (the
// lowest free number first), so "fd 7" may be a different connection from one
// epoll batch to the next. A [Ref] is never reused that way: each [Table.Alloc]
// of a slot bumps the slot's generation, and every [Ref] carries the generation
// it was issued with. Invariants:
//
//   - generation 0 is never issued, so Ref(0) means "no source";
//   - a slot's generation changes only in Alloc, by +1, skipping 0 on wrap;
//     a Ref is therefore unique for 2^32-1 reuses of its slot;
//   - [Table.Get] succeeds only for the Ref most recently issued for that slot,
//     and only until it is freed;
//   - the free list is LIFO: the slot freed last is the one allocated next. This
//     mirrors the kernel's fd reuse on purpose, so stale events are exercised
//     at once instead of hidden by a table that happens to rotate slots;
//   - capacity is fixed at construction (at most [MaxCapacity]); the table
//     never allocates after NewTable.
//
// [PutRef] and [RefOf] carry a Ref through the 64-bit data word of an epoll
// event, like the Go runtime's netpoll packs a sequence tag into it.
//
// Concurrency: Get, Slot, Range, Len and Cap are lock-free and safe from any
// goroutine at any time; Alloc and Free are serialised by a mutex (they run per
// connection, not per event). See [Table.Get] for what its answer guarantees.
package slots
