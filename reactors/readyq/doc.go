// Package readyq is the application ready queue every design's loop keeps,
// and the one an edge-triggered reactor cannot do without: the FIFO of
// sources that still have work after their budget ran out, or that got an
// edge (or a data event prio defers) and have not been served yet.
//
// With EPOLLET a source that is still readable when its turn ends gets no new
// edge, so the reactor must remember it; this queue is that memory. Invariants:
//
//   - dedup: a Ref is queued at most once; pushing it again while queued is a
//     no-op, so a burst of events for one source costs one turn;
//   - FIFO: Pop returns sources in the order of their (effective) Push, so a
//     source requeued at the tail after its turn waits for every other queued
//     source: round-robin by construction;
//   - one live entry per slot: pushing a Ref whose slot is queued under a
//     different generation supersedes the old entry, which will be skipped;
//   - revocation: Remove(slot) makes the slot's queued entry dead in O(1) — a
//     source closed on error or EOF is never popped, even if it was queued
//     before it closed ("errors and EOF revoke the source, including in
//     batches already taken");
//   - dead entries are skipped by Pop and counted (Skipped); Len counts only
//     live entries;
//   - steady state allocates nothing: per-slot state is preallocated and the
//     ring only grows (amortised doubling), never shrinks.
//
// A Queue is owned by one loop and is not safe for concurrent use.
package readyq
