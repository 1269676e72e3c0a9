//go:build linux

package outq

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Flush writes pending bytes to fd, which must be non-blocking, until the
// queue is empty, the socket would block, or a write fails. It returns the
// bytes written by this call (already consumed from the queue), blocked = true
// if the last write returned EAGAIN (wait for EPOLLOUT), and a real error
// (EPIPE, ECONNRESET, EBADF...) as an *os.SyscallError naming "write" with the
// errno, which errors.Is matches against unix.EPIPE etc. A short write keeps
// the remaining bytes queued in order; EINTR is retried. An empty queue makes
// no syscall. Flush does not allocate except to build an error.
//
// It issues write(2) with unix.RawSyscall, not unix.Write: the runtime's
// entersyscall/exitsyscall pair exists so a syscall that blocks can hand its P
// to another thread, and a write to a non-blocking socket never blocks, so for
// it that pair is pure overhead on the hot path. The price is the
// precondition: with a blocking fd a raw write that blocks would stall this P,
// and a stop-the-world GC, until it returns. Hence "must be non-blocking".
func (q *Queue) Flush(fd int) (n int, blocked bool, err error) {
	for !q.Empty() {
		p := q.Pending()
		r, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return n, true, nil
		default:
			return n, false, os.NewSyscallError("write", errno)
		}
		if r == 0 {
			// write(2) of a non-empty buffer returning 0 makes no progress;
			// report it rather than spin.
			return n, false, os.NewSyscallError("write", io.ErrNoProgress)
		}
		q.Consume(int(r))
		n += int(r)
	}
	return n, false, nil
}
