//go:build linux

package epollsys

import (
	"unsafe"
	_ "unsafe" // go:linkname

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/slots"
)

// Nanotime is runtime.nanotime: CLOCK_MONOTONIC in ns through the vDSO, the
// clock a CLOCK_MONOTONIC timerfd is armed in. It never fails and never
// enters the kernel's syscall path.
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64

// ThreadCPU is the CPU time (user + system, ns) of thread tid of this
// process, 0 meaning the calling thread, read from the kernel's per-thread
// CPU clock (ns resolution, unlike the clock ticks of /proc). It returns -1
// if the thread is gone (or the clock cannot be read).
func ThreadCPU(tid int) int64 {
	clock := int32(unix.CLOCK_THREAD_CPUTIME_ID)
	if tid != 0 {
		// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED): ^tid<<3 | PERTHREAD(4) | SCHED(2)
		clock = int32(^uint32(tid)<<3 | 6)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return -1
	}
	return ts.Nano()
}

// Read reads into p from the non-blocking fd: the byte count and 0, or
// -1 and the errno (unix.EAGAIN when nothing is there). An empty p reads
// nothing and returns 0, 0 without a system call.
//
// Read and Write are written out rather than folded over one helper: each
// is then a single call behind the callers' inlined wrappers (a helper
// would put a second call frame on every read and write of the hot path).
func Read(fd int, p []byte) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != unix.EINTR {
			return int(n), e
		}
	}
}

// Write writes p to the non-blocking fd, once (a short write is the
// caller's to finish): the byte count and 0, or -1 and the errno
// (unix.EAGAIN when the send buffer is full). An empty p writes nothing and
// returns 0, 0 without a system call.
func Write(fd int, p []byte) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	for {
		n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != unix.EINTR {
			return int(n), e
		}
	}
}

// PollNow is epoll_wait with timeout 0: it never blocks, and returns the
// number of events stored at the front of evs. An empty evs is refused with
// unix.EINVAL, as the kernel refuses maxevents 0.
func PollNow(epfd int, evs []unix.EpollEvent) (int, unix.Errno) {
	if len(evs) == 0 {
		return 0, unix.EINVAL
	}
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
		if e != unix.EINTR {
			return int(n), e
		}
	}
}

// WaitBlocking is epoll_wait through the runtime's syscall path
// (unix.Syscall6, not RawSyscall6): it waits up to msec ms (-1: until an
// event arrives) and returns the number of events stored at the front of
// evs. An empty evs is refused with unix.EINVAL, as the kernel refuses
// maxevents 0.
func WaitBlocking(epfd int, evs []unix.EpollEvent, msec int) (int, unix.Errno) {
	if len(evs) == 0 {
		return 0, unix.EINVAL
	}
	for {
		n, _, e := unix.Syscall6(unix.SYS_EPOLL_WAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), uintptr(msec), 0, 0)
		if e != unix.EINTR {
			return int(n), e
		}
	}
}

// Ctl is epoll_ctl: op (unix.EPOLL_CTL_ADD, _MOD or _DEL) on fd's
// registration in epfd, for events, with ref in the event's data word (see
// slots.PutRef), so that RefOf of every event of the registration returns
// ref. It goes through the runtime's syscall path, as unix.EpollCtl does;
// the error is the errno.
func Ctl(epfd, op, fd int, events uint32, ref slots.Ref) error {
	ev := unix.EpollEvent{Events: events}
	slots.PutRef(&ev, ref)
	for {
		_, _, e := unix.Syscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		default:
			return e
		}
	}
}

// WriteEventfd adds 1 to the counter of the non-blocking eventfd fd, making
// it readable. A saturated counter (unix.EAGAIN) is success: the fd is
// readable anyway. Any other failure is returned as the errno.
func WriteEventfd(fd int) error {
	one := [8]byte{1}
	for {
		_, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&one[0])), 8)
		switch e {
		case 0, unix.EAGAIN:
			return nil
		case unix.EINTR:
			continue
		default:
			return e
		}
	}
}
