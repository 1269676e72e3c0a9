// Package inetdiag reads TCP sockets from the kernel's tables with
// inet_diag (sock_diag(7)): their state, queues, inode and cookie, each
// answer identified by its whole four-tuple. It is the one place
// reactorlab asks the kernel about a TCP connection it does not own.
//
// The kernel filters a dump by ports only (inet_diag_dump_icsk compares
// idiag_sport and idiag_dport, never the addresses), so a request for one
// connection can be answered with other sockets that share its ports: an
// older connection in TIME_WAIT, or another pair of addresses on
// loopback's 127.0.0.0/8. Conn therefore keeps only the answers whose four
// addresses and ports are the ones asked for, and Pin ties later samples
// to one socket by its cookie, which the kernel never reuses: a sample of
// another socket is discarded, never taken for the connection's.
//
// A dual-stack server's end of an IPv4 connection is an AF_INET6 socket
// with v4-mapped addresses: Conn asks both families and compares
// addresses in their unmapped form.
package inetdiag

import (
	"fmt"
	"net/netip"
)

// TCP states as inet_diag reports them (include/net/tcp_states.h).
const (
	Established   = 1
	SynSent       = 2
	SynRecv       = 3
	FinWait1      = 4
	FinWait2      = 5
	TimeWait      = 6
	Close         = 7
	CloseWait     = 8
	LastAck       = 9
	Listen        = 10
	Closing       = 11
	NewSynRecv    = 12
	BoundInactive = 13
)

// stateNames are the kernel's names of the TCP states, by number: the one
// table every message that shows a state reads (StateName).
var stateNames = [...]string{
	Established: "ESTABLISHED", SynSent: "SYN_SENT", SynRecv: "SYN_RECV", FinWait1: "FIN_WAIT1", FinWait2: "FIN_WAIT2",
	TimeWait: "TIME_WAIT", Close: "CLOSE", CloseWait: "CLOSE_WAIT", LastAck: "LAST_ACK", Listen: "LISTEN", Closing: "CLOSING",
	NewSynRecv: "NEW_SYN_RECV", BoundInactive: "BOUND_INACTIVE",
}

// StateName is the kernel's name of a TCP state ("ESTABLISHED",
// "LAST_ACK"); a number the table does not know is "TCP state N
// (unknown)", so a bare number is never taken for a name.
func StateName(s uint8) string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return fmt.Sprintf("TCP state %d (unknown)", s)
}

// Socket is one TCP socket as the kernel reported it. Local and Remote
// are unmapped (a v4-mapped address reads as IPv4). Unread is the
// receive queue (received, not yet read by the application) and Unsent
// the send queue (written, not yet acknowledged by the peer); for a
// listener they are the accept queue and the backlog. Inode is 0 for a
// socket no descriptor holds any more (TIME_WAIT, or closed and still
// sending). Cookie identifies the socket for as long as the system runs.
type Socket struct {
	Family         uint8
	State          uint8
	Local, Remote  netip.AddrPort
	Unread, Unsent uint32
	Inode          uint32
	Cookie         uint64
	// SegsIn is tcp_info's tcpi_segs_in: the segments the socket has
	// received since it was made, data and pure ACKs alike; read only by
	// DumpInfo (0 from the other readers, and from a kernel that does not
	// send it: HasInfo says which).
	SegsIn uint32
	// BytesReceived is tcp_info's tcpi_bytes_received: the data bytes the
	// socket has received in order since it was made; less Unread, it is
	// the bytes the application has read. Read only by DumpInfo, as
	// SegsIn.
	BytesReceived uint64
	HasInfo       bool
}

// String is the socket as a message shows it: its ends, its state by name
// (StateName), its queues, inode and cookie.
func (s Socket) String() string {
	return fmt.Sprintf("TCP %v→%v %s, %d unread, %d unsent, inode %d, cookie %#x", s.Local, s.Remote, StateName(s.State), s.Unread, s.Unsent, s.Inode, s.Cookie)
}
