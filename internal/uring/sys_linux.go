//go:build linux

package uring

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sqringOffsets is struct io_sqring_offsets (io_uring.h): byte offsets of the
// SQ ring's fields inside its mapping; 40 bytes.
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// cqringOffsets is struct io_cqring_offsets (io_uring.h): byte offsets of the
// CQ ring's fields inside its mapping; 40 bytes.
type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// params is struct io_uring_params (io_uring.h), 120 bytes: the setup call's
// request, filled in by the kernel with the sizes, features and offsets.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// getEventsArg is struct io_uring_getevents_arg (io_uring.h), passed to enter
// with IORING_ENTER_EXT_ARG; ts is the address of a struct __kernel_timespec.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// bufReg is struct io_uring_buf_reg (io_uring.h), the argument of
// IORING_REGISTER_PBUF_RING.
type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// SQE is struct io_uring_sqe (io_uring.h), 64 bytes, as it sits in the mapped
// SQE array. Fields under a union carry the name of the member this layer
// uses. An SQE obtained from Ring.SQE is zeroed and owned by the caller until
// the next Submit or Wait hands it to the kernel.
type SQE struct {
	Opcode   uint8
	Flags    uint8  // IOSQE_* flags
	Ioprio   uint16 // also accept, recv and send flags
	Fd       int32
	Off      uint64 // off, addr2: a timeout's completion count
	Addr     uint64 // a buffer, a timespec, or the user_data to cancel
	Len      uint32
	OpFlags  uint32 // msg_flags, accept_flags, timeout_flags, cancel_flags
	UserData uint64 // returned in the CQE
	BufGroup uint16 // buf_index or buf_group
	_        uint16 // personality
	_        int32  // splice_fd_in, file_index
	_        [2]uint64
}

// CQE is struct io_uring_cqe (io_uring.h), 16 bytes: a completion as copied out
// of the CQ ring.
type CQE struct {
	UserData uint64 // the SQE's user_data
	Res      int32  // the result: a count or descriptor, or -errno
	Flags    uint32 // CQEF* flags; the buffer id in the upper 16 bits with CQEFBuffer
}

// More reports whether the operation stays armed (IORING_CQE_F_MORE); a
// multishot completion without it is the operation's last.
func (c CQE) More() bool { return c.Flags&CQEFMore != 0 }

// BufferID returns the provided buffer the completion filled, and whether it
// used one (IORING_CQE_F_BUFFER). Every completion that carries a buffer id
// owns that buffer until it is recycled into its BufRing.
func (c CQE) BufferID() (uint16, bool) {
	return uint16(c.Flags >> cqeBufferShift), c.Flags&CQEFBuffer != 0
}

// Err is nil for a result of zero or more and the errno otherwise. A recv's
// ENOBUFS (no provided buffer left) is an error value like any other, never
// end of stream; end of stream is Res == 0 with no error.
func (c CQE) Err() error {
	if c.Res >= 0 {
		return nil
	}
	return unix.Errno(-c.Res)
}

// Error is a failed io_uring system call or operation: the call, the argument
// that matters, the errno and, where one is known, what to change.
// errors.Is(err, unix.EPERM) and the like hold through Unwrap.
type Error struct {
	Op     string     // the system call or operation, e.g. "io_uring_setup"
	Detail string     // its arguments, e.g. "entries=256 flags=SINGLE_ISSUER|CQSIZE"
	Errno  unix.Errno // the kernel's answer
	Hint   string     // what to change, empty if nothing is known
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s(%s): %v (%s)", e.Op, e.Detail, e.Errno, errnoName(e.Errno))
	if e.Hint != "" {
		s += ": " + e.Hint
	}
	return s
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Errno }

func errnoName(e unix.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// setupHint says what to change when io_uring_setup fails with errno.
func setupHint(errno unix.Errno) string {
	switch errno {
	case unix.ENOSYS:
		return "the kernel has no io_uring (older than 5.1, or built without CONFIG_IO_URING), or a seccomp filter denies it (container runtimes' default profiles do): run on a kernel with io_uring, outside that filter"
	case unix.EPERM:
		return fmt.Sprintf("io_uring is disabled by sysctl kernel.io_uring_disabled (%s): set it to 0, or to 1 and run in the group kernel.io_uring_group names; or a seccomp or LSM policy denies it", sysctlValue("/proc/sys/kernel/io_uring_disabled"))
	case unix.ENOMEM:
		var lim unix.Rlimit
		cur := "unknown"
		if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil {
			cur = fmt.Sprintf("%d bytes", lim.Cur)
		}
		return fmt.Sprintf("kernels before 5.12 charge ring memory to RLIMIT_MEMLOCK (now %s): raise it (ulimit -l, systemd LimitMEMLOCK=) or ask for fewer entries", cur)
	case unix.EINVAL:
		return "the kernel refused the entries or flags: entries must be 1 to 32768 and the CQ no smaller than the SQ"
	case unix.EMFILE, unix.ENFILE:
		return "no descriptor left for the ring: raise RLIMIT_NOFILE or close descriptors"
	}
	return ""
}

// sysctlValue reads a one-line sysctl file, or says why it could not.
func sysctlValue(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return "now " + strings.TrimSpace(string(b))
}

func sysSetup(entries uint32, p *params) (int, unix.Errno) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	return int(fd), errno
}

func sysEnter(fd int, toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSize)
	return int(n), errno
}

func sysRegister(fd int, op uint32, arg unsafe.Pointer, nrArgs uint32) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), uintptr(op), uintptr(arg), uintptr(nrArgs), 0, 0)
	return int(n), errno
}

// flagNames writes setup flag bits as "A|B", unknown bits by number.
func flagNames(bits uint32) []string {
	var out []string
	for i := 0; i < 32; i++ {
		if bits&(1<<i) == 0 {
			continue
		}
		if i < len(setupFlagNames) {
			out = append(out, setupFlagNames[i])
		} else {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}
