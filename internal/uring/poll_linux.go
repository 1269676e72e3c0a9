//go:build linux

package uring

import "sync/atomic"

// opPollAdd is IORING_OP_POLL_ADD (io_uring.h: enum io_uring_op).
const opPollAdd = 6

// pollAddMulti is IORING_POLL_ADD_MULTI (io_uring.h), in sqe->len: the poll
// stays armed after each completion (5.13).
const pollAddMulti = 1 << 0

// PollMultishot prepares a multishot IORING_OP_POLL_ADD on fd for events
// (POLLIN and the like): one completion, res the events that fired, each time
// fd becomes ready, CQEFMore set while it stays armed. A completion without
// CQEFMore ends it (an error, a cancel, or a completion the kernel could not
// post), and the caller arms it again. It is how a ring's loop also waits on
// descriptors served by readiness, an epoll descriptor among them.
func (r *Ring) PollMultishot(fd int, events uint32, userData uint64) (*SQE, error) {
	sqe, err := r.prep(opPollAdd, fd, userData)
	if err != nil {
		return nil, err
	}
	sqe.Len = pollAddMulti
	sqe.OpFlags = events
	return sqe, nil
}

// OverflowPending reports whether completions wait in the kernel's overflow
// list (IORING_SQ_CQ_OVERFLOW): the CQ was full when they were posted. Reap
// flushes them; a caller that counts what overflowed reads this before Reap.
func (r *Ring) OverflowPending() bool {
	return !r.closed && atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0
}
