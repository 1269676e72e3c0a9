// Package outq is a connection's out-queue: the bytes a reactor has produced for
// a connection but the socket has not yet taken, with the watermarks that turn a
// slow reader into backpressure.
//
// Invariants:
//
//   - bytes leave in the order they were appended, each exactly once: Pending
//     is always the unsent bytes, contiguous, oldest first;
//   - Len never exceeds Limits.HardCap (unless HardCap is 0, unbounded): an
//     Append or Reserve that would cross it is refused whole, nothing appended;
//     the caller then closes the connection;
//   - Paused has hysteresis: it turns true when Len reaches High and false only
//     when Len drops to Low or below, so a reactor does not flap between reading
//     and not reading a connection around one threshold;
//   - a Queue allocates only to grow its buffer; once the buffer fits the
//     connection's working set, Append, Reserve, Consume and Flush allocate
//     nothing (Consume rewinds an emptied buffer and compacts a large dead
//     prefix instead of growing);
//   - Release drops the buffer, so a closed connection holds no memory.
//
// A Queue is owned by the one loop that owns its connection; it is not safe for
// concurrent use. EPOLLOUT should be registered only while the queue is not
// empty (a permanent EPOLLOUT burns CPU on empty queues: the PermanentEPOLLOUT mutant).
package outq
