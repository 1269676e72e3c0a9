//go:build linux

package loadgen

import (
	"fmt"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/epollsys"
)

// The loop's system calls around epoll (reads, writes, waits, epoll_ctl,
// the eventfd, the clocks) are package epollsys's, shared with the
// reference reactors: see its doc for which skip the runtime's syscall
// hand-off and why. What only the generator needs is here: resolving and
// dialling the target, closing with an RST, the timerfd, draining a
// counter fd, and sending and receiving one urgent byte.

// threadCPU is the CPU time (user + system, ns) of the calling thread, 0 if
// its clock cannot be read.
func threadCPU() int64 { return max(epollsys.ThreadCPU(0), 0) }

// resolve turns "host:port" into a socket address.
func resolve(addr string) (unix.Sockaddr, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("loadgen: resolving %s: %w", addr, err)
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return &unix.SockaddrInet4{Port: ta.Port, Addr: [4]byte(ip4)}, nil
	}
	sa := &unix.SockaddrInet6{Port: ta.Port, Addr: [16]byte(ta.IP.To16())}
	if ta.Zone != "" {
		if ifi, err := net.InterfaceByName(ta.Zone); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	return sa, nil
}

// dial opens a non-blocking, close-on-exec TCP socket with TCP_NODELAY and
// starts connecting it to sa. connected is true when the connection was
// established at once; otherwise it completes when the fd turns writable
// (see connectResult).
func dial(sa unix.Sockaddr) (fd int, connected bool, err error) {
	family := unix.AF_INET
	if _, ok := sa.(*unix.SockaddrInet6); ok {
		family = unix.AF_INET6
	}
	fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, false, os.NewSyscallError("socket", err)
	}
	// Frames are written in batches already; Nagle would only hold a small
	// batch back while an earlier one is unacknowledged.
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return -1, false, os.NewSyscallError("setsockopt TCP_NODELAY", err)
	}
	switch err := unix.Connect(fd, sa); err {
	case nil:
		return fd, true, nil
	case unix.EINPROGRESS:
		return fd, false, nil
	default:
		unix.Close(fd)
		return -1, false, os.NewSyscallError("connect", err)
	}
}

// connectResult is the outcome of a non-blocking connect once the fd is
// writable (or in error).
func connectResult(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return os.NewSyscallError("getsockopt SO_ERROR", err)
	}
	if v != 0 {
		return os.NewSyscallError("connect", unix.Errno(v))
	}
	return nil
}

// closeReset closes fd with an RST (SO_LINGER 0).
func closeReset(fd int) error {
	err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// armTimer arms timerfd fd to fire once after d (d <= 0: at once, 1 ns).
func armTimer(fd int, d int64) error {
	d = max(d, 1)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d)}
	if err := unix.TimerfdSettime(fd, 0, &spec, nil); err != nil {
		return os.NewSyscallError("timerfd_settime", err)
	}
	return nil
}

// drainFd reads an eventfd or timerfd counter (8 bytes) so that it is no
// longer readable.
func drainFd(fd int) {
	var b [8]byte
	epollsys.Read(fd, b[:])
}

// sendOOB sends v as TCP urgent data: send(2) of one byte with MSG_OOB
// (and MSG_NOSIGNAL), through RawSyscall like the loop's other
// non-blocking calls. It returns 0, EAGAIN (the send buffer is full) or
// the error.
func sendOOB(fd int, v byte) unix.Errno {
	b := [1]byte{v}
	n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1,
		unix.MSG_OOB|unix.MSG_NOSIGNAL, 0, 0)
	if e == 0 && n != 1 {
		return unix.EAGAIN
	}
	return e
}

// recvOOB reads the connection's urgent byte: recv(2) of one byte with
// MSG_OOB. It returns the byte and 0, or EAGAIN (the urgent mark is
// announced, its byte has not arrived), EINVAL (no urgent byte to read:
// none announced, already read, or passed by an in-band read) or another
// error; a read of 0 bytes (the connection shut down) is EINVAL.
func recvOOB(fd int) (byte, unix.Errno) {
	var b [1]byte
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_OOB, 0, 0)
	switch {
	case e != 0:
		return 0, e
	case n != 1:
		return 0, unix.EINVAL
	}
	return b[0], 0
}
