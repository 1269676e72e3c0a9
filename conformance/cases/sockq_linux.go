//go:build linux

package cases

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/inetdiag"
	"github.com/reactorlab/reactorlab/internal/procfs"
)

// connQueues are the two ends of one loopback connection of a case, each
// tied to its socket by the kernel's cookie when the connection is made
// (inetdiag.Pin): every later sample is of those two sockets, or says the
// server's is gone, and is never taken from another socket that shares the
// ports or the four-tuple (an earlier connection in TIME_WAIT, another
// pair of loopback addresses).
type connQueues struct {
	client, server inetdiag.Pinned
	// serverPinned is false when the server's end was not in the kernel's
	// tables when the connection was made (closed at once): every sample
	// then says it is gone.
	serverPinned bool
}

// pinQueues ties conn's two ends to their sockets. The server's end of a
// connection whose handshake has completed is in the kernel's tables from
// then on, accepted or not, until the server closes it.
func pinQueues(conn *net.TCPConn) (*connQueues, error) {
	local, ok1 := conn.LocalAddr().(*net.TCPAddr)
	remote, ok2 := conn.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("not a TCP connection")
	}
	l, r := local.AddrPort(), remote.AddrPort()
	client, _, found, err := inetdiag.Pin(l, r)
	if err != nil {
		return nil, fmt.Errorf("inet_diag of the client's socket %v→%v: %w", l, r, err)
	}
	if !found {
		return nil, fmt.Errorf("inet_diag: the client's socket %v→%v is not in the kernel's tables", l, r)
	}
	server, _, found, err := inetdiag.Pin(r, l)
	if err != nil {
		return nil, fmt.Errorf("inet_diag of the server's socket %v→%v: %w", r, l, err)
	}
	return &connQueues{client: client, server: server, serverPinned: found}, nil
}

// sample reads, with inet_diag (sock_diag(7), no privilege needed for
// TCP), the queues of both ends: the client's (this process) and the
// server's, which is in the same network namespace. The server's end
// that the kernel no longer has is reported with serverGone, not as an
// error.
//
// The two ends are read one after the other. With serverFirst (data flows
// only from the server, after the client's half-close) a segment moving
// meanwhile is seen at both ends or at the client's only, never at
// neither, so held() can only come out low; reading the client first
// suits data flowing the other way.
func (cq *connQueues) sample(serverFirst bool) (sockQueues, error) {
	var q sockQueues
	client := func() error {
		ours, ok, err := cq.client.Sample()
		if err != nil {
			return fmt.Errorf("inet_diag of the client's socket %v→%v: %w", cq.client.Local, cq.client.Remote, err)
		}
		if !ok {
			return fmt.Errorf("inet_diag: the client's socket %v→%v is gone", cq.client.Local, cq.client.Remote)
		}
		q.clientUnsent, q.clientUnread = int64(ours.Unsent), int64(ours.Unread)
		return nil
	}
	server := func() error {
		if !cq.serverPinned {
			q.serverGone = true
			return nil
		}
		theirs, ok, err := cq.server.Sample()
		if err != nil {
			return fmt.Errorf("inet_diag of the server's socket %v→%v: %w", cq.server.Local, cq.server.Remote, err)
		}
		if !ok {
			// A socket the kernel has let go of is no longer in its tables.
			q.serverGone = true
			return nil
		}
		q.serverUnread, q.serverUnsent, q.serverState = int64(theirs.Unread), int64(theirs.Unsent), theirs.State
		return nil
	}
	first, second := client, server
	if serverFirst {
		first, second = server, client
	}
	if err := first(); err != nil {
		return q, err
	}
	return q, second()
}

// TCP states as inet_diag reports them (include/net/tcp_states.h).
const (
	tcpEstablished = inetdiag.Established
	tcpFinWait1    = inetdiag.FinWait1
	tcpFinWait2    = inetdiag.FinWait2
	tcpCloseWait   = inetdiag.CloseWait
)

// dialSmall dials addr with a small receive and send buffer, set before
// the connection is made (the receive window is fixed at the handshake):
// the client then holds little of what it sends or is sent, so what the
// kernel cannot hold backs up into the server.
func dialSmall(addr string) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			if serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, smallClientBuf); serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, clientSendBuf)
			}
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// kernelCapacity is the most the kernel can buffer for one connection on
// the server's side: its receive buffer and its send buffer at the largest
// sizes autotuning (tcp_rmem, tcp_wmem) or an unprivileged setsockopt
// (twice rmem_max, wmem_max) can give them. A server that forces larger
// buffers (SO_RCVBUFFORCE, root) can absorb more.
func kernelCapacity() (int64, string, error) {
	third := func(name string) (int64, error) {
		b, err := procfs.ReadSysctl(name)
		if err != nil {
			return 0, err
		}
		f := strings.Fields(b)
		if len(f) == 0 {
			return 0, fmt.Errorf("%s is empty", procfs.SysctlPath(name))
		}
		return strconv.ParseInt(f[len(f)-1], 10, 64)
	}
	var v [4]int64
	for i, p := range []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max", "net.core.wmem_max"} {
		n, err := third(p)
		if err != nil {
			return 0, "", err
		}
		v[i] = n
	}
	rcv, snd := max(v[0], 2*v[2]), max(v[1], 2*v[3])
	return rcv + snd, fmt.Sprintf("server receive buffer ≤ max(tcp_rmem %d, 2 × rmem_max %d) + send buffer ≤ max(tcp_wmem %d, 2 × wmem_max %d)", v[0], v[2], v[1], v[3]), nil
}

// tcpSockets keeps, of fds (as openFds lists them, "pid:fd→socket:[inode]"),
// the TCP sockets: those whose inode is in the kernel's TCP tables (both
// families, every state), each with its ends and state appended, and
// those the socket file system names TCP or MPTCP (a reset connection,
// no longer in the tables). A socket that is not TCP (a Unix socket,
// netlink) is left out.
func tcpSockets(fds []string) ([]string, error) {
	if len(fds) == 0 {
		return nil, nil
	}
	byInode := map[uint32]inetdiag.Socket{}
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := inetdiag.Dump(fam, 0, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("reading the kernel's TCP tables: %w", err)
		}
		for _, s := range socks {
			if s.Inode != 0 {
				byInode[s.Inode] = s
			}
		}
	}
	var out []string
	for _, f := range fds {
		i := strings.Index(f, "socket:[")
		if i < 0 {
			continue
		}
		ino, err := strconv.ParseUint(strings.TrimSuffix(f[i+len("socket:["):], "]"), 10, 32)
		if err != nil {
			continue
		}
		if s, ok := byInode[uint32(ino)]; ok {
			out = append(out, fmt.Sprintf("%s (TCP %v→%v, %s, %d unread, %d unsent)", f, s.Local, s.Remote, inetdiag.StateName(s.State), s.Unread, s.Unsent))
			continue
		}
		// A reset or closed connection whose descriptor is still open is
		// no longer in the tables: ask the socket itself what it is.
		var pid, fd int
		if _, err := fmt.Sscanf(f, "%d:%d", &pid, &fd); err != nil {
			continue
		}
		if proto, ok, err := sockProtoOf(pid, fd, uint32(ino)); err != nil {
			return nil, fmt.Errorf("telling what %s is: %w", f, err)
		} else if ok && isTCP(proto) {
			out = append(out, fmt.Sprintf("%s (%s, no longer in the kernel's tables, its descriptor still open)", f, proto))
		}
	}
	return out, nil
}

// isTCP reports whether a socket file system protocol name is TCP's:
// plain, or MPTCP (which Go's net listens with by default, falling back
// to TCP per connection).
func isTCP(proto string) bool {
	switch proto {
	case "TCP", "TCPv6", "MPTCP", "MPTCPv6":
		return true
	}
	return false
}

// sockProtoOf is the protocol of the socket that descriptor fd of process
// pid refers to ("TCP", "TCPv6", "UNIX-STREAM", …), as the socket file
// system names it (the system.sockprotoname attribute of
// /proc/PID/fd/FD: the read access that listing the descriptors needs). ok
// is false when the descriptor is gone or now refers to another file
// than inode ino (its number reused meanwhile): it is then nobody's.
func sockProtoOf(pid, fd int, ino uint32) (proto string, ok bool, err error) {
	path := procfs.FdPath(pid, fd)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Ino != uint64(ino) {
		return "", false, nil
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(path, "system.sockprotoname", buf)
	switch {
	case err == unix.ENOENT || err == unix.ESRCH:
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("getxattr %s system.sockprotoname: %w", path, err)
	}
	if err := unix.Stat(path, &st); err != nil || st.Ino != uint64(ino) {
		return "", false, nil
	}
	return strings.TrimRight(string(buf[:n]), "\x00"), true, nil
}

// listenerInodes finds the sockets listening on addr's port, on any
// address, IPv4 or IPv6 (a dual-stack server listens on [::]), in the
// kernel's TCP tables (inet_diag), by their inodes.
func listenerInodes(addr string) (map[uint64]bool, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	return inetdiag.ListeningInodes(uint16(tcp.Port))
}
