// Package uring is the proactor reference design: one loop on one locked
// OS thread that serves its connections through an io_uring instead of an
// epoll set.
//
// The kernel does the reads and writes and reports their results: each
// listener has a multishot accept armed, each connection a multishot recv
// that takes its buffers from the loop's provided buffer ring, and a
// connection's out-queue is written by one send in flight at a time. The
// loop blocks in io_uring_enter, which submits what the round queued and
// returns completions; each completion is routed by the (slot, generation)
// in its user_data, never by descriptor number. Its own descriptors (the
// ingress eventfd, the timerfd) stay in an epoll set the ring polls, so
// budgets, ingress, timers, STOP and the ledger are the shared loop's
// (package reactors, Layout.Completion; the completion path is
// reactors/ring_linux.go).
//
// Its hooks (loop_linux.go): one loop (Layout, Completion set); a
// connection whose receives completed in a batch is served once the batch
// is reaped, one turn per batch (lt's flat policy: OnEvent → Turn), a turn
// bounded by the input and time budgets, and
// requeued only with complete frames (or its end of stream) left
// buffered; a round serves up to Budgets.Consume queued sources.
//
// It promises what every reference reactor promises (package reactors),
// and what a completion model adds:
//   - running out of provided buffers is backpressure, not failure: a
//     receive that ends with ENOBUFS waits, in the order it starved, and
//     the bytes wait in the socket meanwhile; a round arms again, oldest
//     first, at most as many as it gave buffers back to the ring (one
//     when it gave none), so a starved receive is not armed into an empty
//     ring to starve again at once (Counters.EnobufsRearms,
//     Counters.RingBuffersReturned);
//   - no completion is lost: completions that overflow the completion
//     queue are flushed from the kernel's list and handled
//     (Counters.CQOverflowFlushes);
//   - an operation's result never reaches another connection: a closed
//     connection's operations in flight are cancelled, and its descriptor
//     is closed (so its number reused) only once the last has completed;
//   - the out-queue's watermarks are backpressure as on the epoll designs:
//     above the high one the receive is cancelled, and armed again at the
//     low one.
//
// It needs Linux 6.0 (multishot recv; provided buffer rings 5.19) and
// io_uring allowed: where io_uring_setup fails (ENOSYS, or EPERM from
// kernel.io_uring_disabled or a seccomp policy) New refuses with the errno
// and a hint (reactors.ProbeCompletion). It takes no urgent data (--urgent
// oob: MSG_OOB has no completion-path reading of the mark).
//
// Its sizes are Config.Ring (--ring-entries, --ring-cq, --ring-buffers,
// --ring-buffer-size). Its mutants: uring-enobufs-eof, uring-overflow-ignored,
// uring-close-no-cancel (reactors.Mutants).
package uring
