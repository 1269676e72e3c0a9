//go:build linux

package uring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Each method below takes the next SQE (Ring.SQE), prepares one operation in
// it and returns it, so the caller can add SQE flags such as SQEIOLink. The
// operation reaches the kernel at the next Submit or Wait. userData comes back
// in every completion of the operation and must be below ReservedUserData. An
// operation that pins Go memory (Send, Timeout, a Waker's read) releases it at
// the first completion without CQEFMore carrying its user_data, so its
// user_data must not be shared with another operation in flight.

func (r *Ring) prep(op uint8, fd int, userData uint64) (*SQE, error) {
	if userData >= ReservedUserData {
		return nil, fmt.Errorf("uring: user_data %#x is reserved for the layer (want below %#x)", userData, ReservedUserData)
	}
	return r.prepReserved(op, fd, userData)
}

func (r *Ring) prepReserved(op uint8, fd int, userData uint64) (*SQE, error) {
	sqe, err := r.SQE()
	if err != nil {
		return nil, err
	}
	sqe.Opcode = op
	sqe.Fd = int32(fd)
	sqe.UserData = userData
	return sqe, nil
}

// Nop prepares IORING_OP_NOP: it completes with res 0.
func (r *Ring) Nop(userData uint64) (*SQE, error) {
	return r.prep(opNop, -1, userData)
}

// AcceptMultishot prepares a multishot IORING_OP_ACCEPT on the listening
// socket fd: one completion per accepted connection, res the new descriptor
// (close-on-exec), CQEFMore set while it stays armed. It passes no sockaddr
// (see the package comment).
func (r *Ring) AcceptMultishot(fd int, userData uint64) (*SQE, error) {
	sqe, err := r.prep(opAccept, fd, userData)
	if err != nil {
		return nil, err
	}
	sqe.Ioprio = acceptMultishot
	sqe.OpFlags = unix.SOCK_CLOEXEC
	return sqe, nil
}

// RecvMultishot prepares a multishot IORING_OP_RECV on fd that takes its
// buffers from the buffer ring br: one completion per receive, with the
// buffer's id (CQE.BufferID) and res the byte count; res 0 is end of stream;
// -ENOBUFS ends the operation when br is empty and is not end of stream: the
// bytes stay in the socket, and the caller arms the recv again after
// recycling buffers.
func (r *Ring) RecvMultishot(fd int, br *BufRing, userData uint64) (*SQE, error) {
	sqe, err := r.Recv(fd, br, userData)
	if err != nil {
		return nil, err
	}
	sqe.Ioprio = recvMultishot
	return sqe, nil
}

// Recv prepares a single IORING_OP_RECV on fd into a buffer selected from br
// (IOSQE_BUFFER_SELECT, buf_group): one completion, as RecvMultishot's.
func (r *Ring) Recv(fd int, br *BufRing, userData uint64) (*SQE, error) {
	if br == nil || br.ring != r {
		return nil, errors.New("uring: Recv needs a buffer ring registered on this ring")
	}
	sqe, err := r.prep(opRecv, fd, userData)
	if err != nil {
		return nil, err
	}
	sqe.Flags = sqeBufferSelect
	sqe.BufGroup = br.group
	return sqe, nil
}

// Send prepares IORING_OP_SEND of buf on fd, with MSG_NOSIGNAL (a closed peer
// is -EPIPE, never SIGPIPE). res is the byte count sent, which may be short.
// buf is pinned until the completion is reaped: the caller must not change it
// before then. Go memory passed here escapes to the heap (the compiler sees it
// pinned), so no goroutine stack reaches the kernel; memory from a BufRing
// (BufRing.Bytes) is not Go memory and is sent as it is, without a copy, the
// buffer recycled after the send's completion.
func (r *Ring) Send(fd int, buf []byte, userData uint64) (*SQE, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("uring: Send on fd %d of an empty buffer", fd)
	}
	sqe, err := r.prep(opSend, fd, userData)
	if err != nil {
		return nil, err
	}
	if !r.inBufRing(&buf[0]) {
		r.pin(userData, &buf[0])
	}
	sqe.Addr = uint64(uintptr(unsafe.Pointer(&buf[0])))
	sqe.Len = uint32(len(buf))
	sqe.OpFlags = unix.MSG_NOSIGNAL
	return sqe, nil
}

// CloseFD prepares IORING_OP_CLOSE of fd. Operations still in flight on fd are
// not cancelled by it: cancel them first (CancelFD), so that a descriptor
// number reused later never receives an old operation's result.
func (r *Ring) CloseFD(fd int, userData uint64) (*SQE, error) {
	return r.prep(opClose, fd, userData)
}

// CancelFD prepares IORING_OP_ASYNC_CANCEL of every operation in flight on fd
// (IORING_ASYNC_CANCEL_FD|IORING_ASYNC_CANCEL_ALL). Its res is the number
// cancelled, or -ENOENT if none was found; each cancelled operation completes
// with -ECANCELED (or its result, if it finished first).
func (r *Ring) CancelFD(fd int, userData uint64) (*SQE, error) {
	sqe, err := r.prep(opAsyncCancel, fd, userData)
	if err != nil {
		return nil, err
	}
	sqe.OpFlags = cancelFD | cancelAll
	return sqe, nil
}

// CancelUserData prepares IORING_OP_ASYNC_CANCEL of every operation submitted
// with user_data target.
func (r *Ring) CancelUserData(target, userData uint64) (*SQE, error) {
	sqe, err := r.prep(opAsyncCancel, -1, userData)
	if err != nil {
		return nil, err
	}
	sqe.Addr = target
	sqe.OpFlags = cancelAll
	return sqe, nil
}

// Timeout prepares IORING_OP_TIMEOUT: it completes with -ETIME after d, or
// with res 0 once count other completions have been posted (count 0: only the
// time). Its timespec is pinned until the completion is reaped.
func (r *Ring) Timeout(d time.Duration, count uint32, userData uint64) (*SQE, error) {
	if d < 0 {
		return nil, fmt.Errorf("uring: Timeout of %v: negative", d)
	}
	var sqe *SQE
	var err error
	if userData == userDataWaitTimeout {
		sqe, err = r.prepReserved(opTimeout, -1, userData)
	} else {
		sqe, err = r.prep(opTimeout, -1, userData)
	}
	if err != nil {
		return nil, err
	}
	ts := new(unix.Timespec)
	*ts = unix.NsecToTimespec(int64(d))
	r.pin(userData, ts)
	sqe.Addr = uint64(uintptr(unsafe.Pointer(ts)))
	sqe.Len = 1
	sqe.Off = uint64(count)
	return sqe, nil
}

// Waker is the way another thread wakes a ring's loop blocked in Wait: an
// eventfd the ring keeps an IORING_OP_READ armed on. Wake, from any goroutine,
// writes the eventfd, the read completes with the Waker's user_data, and the
// loop calls Rearm after reaping it. Several Wakes before the loop reaps fold
// into one completion (the eventfd counter adds up), so a wakeup is never lost
// and costs the loop one completion per round at most.
//
// An eventfd rather than IORING_OP_MSG_RING: a MSG_RING comes from a ring, so
// each waking thread would need a ring of its own, and a SINGLE_ISSUER ring
// cannot be submitted to from other threads; a write(2) to an eventfd needs
// neither, works from any thread, and is what reactors/ingress already wakes
// the epoll loops with.
type Waker struct {
	ring     *Ring
	fd       int
	userData uint64
	counter  *[8]byte // the read's target: heap memory pinned while the read is armed
}

// NewWaker creates the eventfd and arms its read with userData. The eventfd is
// blocking: io_uring polls it instead of returning EAGAIN.
func (r *Ring) NewWaker(userData uint64) (*Waker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, &Error{Op: "eventfd", Detail: "flags=EFD_CLOEXEC", Errno: err.(unix.Errno)}
	}
	w := &Waker{ring: r, fd: fd, userData: userData, counter: new([8]byte)}
	if err := w.Rearm(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return w, nil
}

// Rearm arms the eventfd read again; the loop calls it after reaping the
// Waker's completion.
func (w *Waker) Rearm() error {
	sqe, err := w.ring.prep(opRead, w.fd, w.userData)
	if err != nil {
		return err
	}
	w.ring.pin(w.userData, w.counter)
	sqe.Addr = uint64(uintptr(unsafe.Pointer(&w.counter[0])))
	sqe.Len = 8
	return nil
}

// Wake wakes the ring's loop. It is safe from any goroutine and never blocks
// (the counter would have to reach 2^64-2 first).
func (w *Waker) Wake() error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(w.fd, one[:]); err != nil {
		return &Error{Op: "write", Detail: fmt.Sprintf("waker eventfd fd=%d", w.fd), Errno: err.(unix.Errno)}
	}
	return nil
}

// Close closes the eventfd. The armed read completes with an error (or is
// cancelled by Ring.Close); close the Waker after the ring, or cancel its read
// first.
func (w *Waker) Close() error {
	if err := unix.Close(w.fd); err != nil {
		return &Error{Op: "close", Detail: fmt.Sprintf("waker eventfd fd=%d", w.fd), Errno: err.(unix.Errno)}
	}
	return nil
}
