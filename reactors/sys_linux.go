//go:build linux

package reactors

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/epollsys"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/reactors/timers"
)

// The loop's system calls around epoll are package epollsys's (see its
// doc for which go through unix.RawSyscall, skipping the runtime's syscall
// hand-off, and why; EINTR is retried there): the functions below are the
// names this package calls them by, each small enough to inline, adding the
// error context in this package's words. Only accept4, which the load
// generator does not make, is written here.

// nanotime is the loop's clock: CLOCK_MONOTONIC ns through the vDSO, the
// clock timerfd deadlines are armed in.
func nanotime() int64 { return timers.Now() }

// threadCPU is the CPU time (user + system, ns) of thread tid of this
// process, 0 meaning the calling thread, through the kernel's per-thread CPU
// clock (ns resolution, unlike /proc's clock ticks). It returns -1 if the
// thread is gone.
func threadCPU(tid int) int64 { return epollsys.ThreadCPU(tid) }

// rawRead reads into p from a non-blocking fd (never blocks).
func rawRead(fd int, p []byte) (int, unix.Errno) { return epollsys.Read(fd, p) }

// rawWrite writes p to a non-blocking fd (the DropShortWrite mutant's
// flush; the correct one is outq.Queue.Flush).
func rawWrite(fd int, p []byte) (int, unix.Errno) { return epollsys.Write(fd, p) }

// rawAccept accepts one connection from a non-blocking listener, creating
// the new fd non-blocking and close-on-exec. It never blocks, so it goes
// through unix.RawSyscall6 like epollsys's calls; EINTR and ECONNABORTED
// (a connection reset before it was accepted) are retried.
func rawAccept(fd int) (int, unix.Errno) {
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), 0, 0, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		if e == unix.EINTR || e == unix.ECONNABORTED {
			continue
		}
		return int(n), e
	}
}

// pollNow is epoll_wait with timeout 0: it never blocks.
func pollNow(epfd int, evs []unix.EpollEvent) (int, unix.Errno) { return epollsys.PollNow(epfd, evs) }

// waitBlocking is epoll_wait through the runtime's syscall path; msec -1
// waits until an event arrives.
func waitBlocking(epfd int, evs []unix.EpollEvent, msec int) (int, error) {
	n, e := epollsys.WaitBlocking(epfd, evs, msec)
	if e != 0 {
		return n, e
	}
	return n, nil
}

// writeEventfd adds 1 to an eventfd counter (a saturated counter is
// success: the fd is readable anyway).
func writeEventfd(fd int) error {
	if err := epollsys.WriteEventfd(fd); err != nil {
		return os.NewSyscallError("write eventfd", err)
	}
	return nil
}

// epollCtl registers, changes or removes (op) fd in epfd for events, with
// ref in the event's data word; the error names the operation.
func epollCtl(epfd, op, fd int, events uint32, ref slots.Ref) error {
	if err := epollsys.Ctl(epfd, op, fd, events, ref); err != nil {
		return os.NewSyscallError(epollOpName(op), err)
	}
	return nil
}

func epollOpName(op int) string {
	switch op {
	case unix.EPOLL_CTL_ADD:
		return "epoll_ctl add"
	case unix.EPOLL_CTL_MOD:
		return "epoll_ctl mod"
	default:
		return "epoll_ctl del"
	}
}

// listenTCP opens a non-blocking, close-on-exec TCP listener on addr
// ("host:port"; port 0 picks one) and returns its fd and bound address;
// reusePort sets SO_REUSEPORT before bind, so listeners of one process
// may share the address and the kernel spreads connections over them.
func listenTCP(addr string, backlog int, reusePort bool) (int, netip.AddrPort, error) {
	ap, err := resolveListen(addr)
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	family := unix.AF_INET
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, netip.AddrPort{}, os.NewSyscallError("socket", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return -1, netip.AddrPort{}, os.NewSyscallError("setsockopt SO_REUSEADDR", err)
	}
	if reusePort {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			unix.Close(fd)
			return -1, netip.AddrPort{}, os.NewSyscallError("setsockopt SO_REUSEPORT", err)
		}
	}
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	} else {
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, netip.AddrPort{}, fmt.Errorf("bind %s: %w", addr, os.NewSyscallError("bind", err))
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return -1, netip.AddrPort{}, os.NewSyscallError("listen", err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, netip.AddrPort{}, os.NewSyscallError("getsockname", err)
	}
	switch b := bound.(type) {
	case *unix.SockaddrInet4:
		return fd, netip.AddrPortFrom(netip.AddrFrom4(b.Addr), uint16(b.Port)), nil
	case *unix.SockaddrInet6:
		return fd, netip.AddrPortFrom(netip.AddrFrom16(b.Addr), uint16(b.Port)), nil
	}
	unix.Close(fd)
	return -1, netip.AddrPort{}, fmt.Errorf("listen %s: unexpected socket address %T", addr, bound)
}

func resolveListen(addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("listen address %q: host must be an IP address: %w", addr, err)
	}
	tcp, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(ip.String(), port))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("listen address %q: %w", addr, err)
	}
	return netip.AddrPortFrom(ip, uint16(tcp.Port)), nil
}
