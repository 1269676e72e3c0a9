//go:build linux

package cases

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// serverPids are the processes whose descriptor tables hold the
// instance's sockets: a process target's group (read once: listing it
// walks /proc), or this process for an in-process reactor or a Go server.
func serverPids(c *conformance.C) ([]int, error) {
	if g, ok := c.Instance().(conformance.ProcessGroup); ok {
		return g.Group()
	}
	return []int{os.Getpid()}, nil
}

// serverFd finds the descriptor number by which the server holds its end
// of a connection: the socket's inode from inet_diag (its pinned server
// end), looked up in the descriptor tables of pids (serverPids). fd is
// -1, with why, when the end is gone or no table holds it.
func serverFd(pids []int, socks *connQueues) (fd int, ino uint64, why string) {
	if socks == nil || !socks.serverPinned {
		return -1, 0, "the server's end of the connection was not in the kernel's tables"
	}
	s, ok, err := socks.server.Sample()
	switch {
	case err != nil:
		return -1, 0, fmt.Sprintf("inet_diag of the server's end: %v", err)
	case !ok:
		return -1, 0, "the server's end is gone"
	case s.Inode == 0:
		return -1, 0, "the server's end has no descriptor (closed, the kernel finishing it)"
	}
	ino = uint64(s.Inode)
	for _, pid := range pids {
		fds, err := procfs.ReadFds(pid)
		if err != nil {
			continue // a process that exited meanwhile holds nothing
		}
		for _, f := range fds {
			if n, ok := f.SocketInode(); ok && n == ino {
				return f.Num, ino, ""
			}
		}
	}
	return -1, ino, fmt.Sprintf("socket:[%d] is in no descriptor table of processes %v", ino, pids)
}

// holdsSocket reports whether a process of pids holds socket:[ino] as
// descriptor fd.
func holdsSocket(pids []int, fd int, ino uint64) bool {
	for _, pid := range pids {
		fds, err := procfs.ReadFds(pid)
		if err != nil {
			continue
		}
		for _, f := range fds {
			if n, ok := f.SocketInode(); ok && f.Num == fd && n == ino {
				return true
			}
		}
	}
	return false
}

// unconnected is a TCP socket made before it is connected, so that its
// descriptor number is taken before the server frees one (see
// p3ServerCloseRound).
type unconnected struct {
	fd   int
	addr unix.Sockaddr
	keep *os.File // owns fd once Conn made one of it
}

// newSocketFor makes an unconnected TCP socket for addr ("host:port").
func newSocketFor(addr string) (*unconnected, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	return &unconnected{fd: fd, addr: sa}, nil
}

// Connect connects the socket (blocking: on loopback, at once).
func (u *unconnected) Connect() error {
	if err := unix.Connect(u.fd, u.addr); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// Conn is the connected socket as a net.Conn (a duplicate descriptor;
// Close still closes the original).
func (u *unconnected) Conn() (net.Conn, error) {
	f := os.NewFile(uintptr(u.fd), "tcp")
	conn, err := net.FileConn(f)
	// f's finalizer would close u.fd: keep it until Close does.
	u.keep = f
	return conn, err
}

// Close closes the original descriptor.
func (u *unconnected) Close() error {
	if u.keep != nil {
		return u.keep.Close()
	}
	return unix.Close(u.fd)
}
