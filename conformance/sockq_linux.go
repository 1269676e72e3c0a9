//go:build linux

package conformance

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
)

// sampleQueues reads, with inet_diag (sock_diag(7), no privilege needed
// for TCP), the queues of both ends of the loopback connection conn: the
// client's (this process) and the server's, which is in the same network
// namespace. A dual-stack server's end is an AF_INET6 socket with
// v4-mapped addresses, which inet_diag's AF_INET query does not find: it
// is then read from /proc/net/tcp6. The server's end found in neither is
// reported with serverGone, not as an error.
//
// The two ends are read one after the other. With serverFirst (data flows
// only from the server, after the client's half-close) a segment moving
// meanwhile is seen at both ends or at the client's only, never at
// neither, so held() can only come out low; reading the client first
// suits data flowing the other way.
func sampleQueues(conn *net.TCPConn, serverFirst bool) (sockQueues, error) {
	local, ok1 := conn.LocalAddr().(*net.TCPAddr)
	remote, ok2 := conn.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return sockQueues{}, fmt.Errorf("not a TCP connection")
	}
	var q sockQueues
	client := func() error {
		ours, err := netlink.SocketGet(local, remote)
		if err != nil {
			return fmt.Errorf("inet_diag of the client's socket %v→%v: %w", local, remote, err)
		}
		q.clientUnsent, q.clientUnread = int64(ours.WQueue), int64(ours.RQueue)
		return nil
	}
	server := func() {
		if theirs, err := netlink.SocketGet(remote, local); err == nil {
			q.serverUnread, q.serverUnsent, q.serverState = int64(theirs.RQueue), int64(theirs.WQueue), theirs.State
			return
		}
		if unsent, unread, state, ok := procNetTCP6(remote.Port, local.Port); ok {
			q.serverUnread, q.serverUnsent, q.serverState = unread, unsent, state
			return
		}
		// A socket the kernel has let go of is no longer in its tables.
		q.serverGone = true
	}
	if serverFirst {
		server()
		return q, client()
	}
	if err := client(); err != nil {
		return q, err
	}
	server()
	return q, nil
}

// procNetTCP6 finds the socket of /proc/net/tcp6 with local port lport
// and remote port rport, and returns its queues (tx_queue is write_seq −
// snd_una and rx_queue rcv_nxt − copied_seq, as in inet_diag) and state.
func procNetTCP6(lport, rport int) (unsent, unread int64, state uint8, ok bool) {
	b, err := os.ReadFile("/proc/net/tcp6")
	if err != nil {
		return 0, 0, 0, false
	}
	lp, rp := fmt.Sprintf(":%04X", lport), fmt.Sprintf(":%04X", rport)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local rem st tx_queue:rx_queue ...
		if len(f) < 5 || !strings.HasSuffix(f[1], lp) || !strings.HasSuffix(f[2], rp) {
			continue
		}
		tx, rx, _ := strings.Cut(f[4], ":")
		t, err1 := strconv.ParseInt(tx, 16, 64)
		r, err2 := strconv.ParseInt(rx, 16, 64)
		st, err3 := strconv.ParseUint(f[3], 16, 8)
		if err1 != nil || err2 != nil || err3 != nil {
			return 0, 0, 0, false
		}
		return t, r, uint8(st), true
	}
	return 0, 0, 0, false
}

// TCP states as inet_diag reports them (include/net/tcp_states.h).
const (
	tcpEstablished = netlink.TCP_ESTABLISHED
	tcpFinWait1    = netlink.TCP_FIN_WAIT1
	tcpFinWait2    = netlink.TCP_FIN_WAIT2
	tcpCloseWait   = netlink.TCP_CLOSE_WAIT
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
	third := func(path string) (int64, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s is empty", path)
		}
		return strconv.ParseInt(f[len(f)-1], 10, 64)
	}
	var v [4]int64
	for i, p := range []string{"/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/ipv4/tcp_wmem", "/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max"} {
		n, err := third(p)
		if err != nil {
			return 0, "", err
		}
		v[i] = n
	}
	rcv, snd := max(v[0], 2*v[2]), max(v[1], 2*v[3])
	return rcv + snd, fmt.Sprintf("server receive buffer ≤ max(tcp_rmem %d, 2 × rmem_max %d) + send buffer ≤ max(tcp_wmem %d, 2 × wmem_max %d)", v[0], v[2], v[1], v[3]), nil
}
