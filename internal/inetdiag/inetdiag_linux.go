//go:build linux

package inetdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dump returns the TCP sockets of family (unix.AF_INET or AF_INET6) whose
// state is in the bit set states (1<<Established | …; 0: every state)
// and, where non-zero, whose local port is lport and remote port rport:
// the kernel's own filter. It reads the network namespace of the calling
// thread.
func Dump(family uint8, states uint32, lport, rport uint16) ([]Socket, error) {
	fd, err := openDiag()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return DumpOn(fd, family, states, lport, rport)
}

// openDiag opens an inet_diag socket whose reads give up after a second:
// the kernel answers a dump at once, and the bound is for a wedged one.
func openDiag() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, fmt.Errorf("inet_diag socket: %w", err)
	}
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("inet_diag SO_RCVTIMEO: %w", err)
	}
	return fd, nil
}

// ListeningInodes returns the inodes of the TCP sockets listening on
// port, on any address, IPv4 or IPv6 (a dual-stack server listens on
// [::]): the inodes a descriptor table names ("socket:[N]") and an epoll
// item's Ino carries. It is an error when no socket listens on port.
func ListeningInodes(port uint16) (map[uint64]bool, error) {
	out := map[uint64]bool{}
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := Dump(fam, 1<<Listen, port, 0)
		if err != nil {
			return nil, fmt.Errorf("reading the kernel's TCP tables: %w", err)
		}
		for _, s := range socks {
			if s.Inode != 0 {
				out[uint64(s.Inode)] = true
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no socket listening on port %d in the kernel's TCP tables", port)
	}
	return out, nil
}

// Listeners returns every TCP socket listening in the calling thread's
// network namespace, IPv4 and IPv6, on any address and port, with the
// inode a descriptor table names ("socket:[N]"; 0 for one no descriptor
// holds): what a process listens on, found by its descriptors' inodes.
func Listeners() ([]Socket, error) {
	var out []Socket
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := Dump(fam, 1<<Listen, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("reading the kernel's TCP tables: %w", err)
		}
		out = append(out, socks...)
	}
	return out, nil
}

// DumpOn is Dump on fd, a NETLINK_SOCK_DIAG socket of the caller's: it
// reads the network namespace fd was opened in, from any thread (a
// sampler that opened it in a server's namespace). fd's receive timeout,
// if any, bounds the wait for each answer.
func DumpOn(fd int, family uint8, states uint32, lport, rport uint16) ([]Socket, error) {
	return dump(fd, family, states, lport, rport, false)
}

// DumpInfo is Dump of every socket of family with each one's tcp_info
// asked for too (INET_DIAG_INFO), from which SegsIn and BytesReceived
// are read: a larger answer, so only the readers that want the counts
// ask for it.
func DumpInfo(family uint8) ([]Socket, error) {
	fd, err := openDiag()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return dump(fd, family, 0, 0, 0, true)
}

// The inet_diag layout (linux/inet_diag.h): a request is struct
// inet_diag_req_v2 (56 bytes), each answer a struct inet_diag_msg (72
// bytes). Both hold a struct inet_diag_sockid at offset 8 (request) and 4
// (answer): sport, dport (big-endian), src[16], dst[16], if, cookie[2].
const (
	reqLen      = 56
	msgLen      = 72
	reqSockid   = 8
	msgSockid   = 4
	msgRqueue   = 56
	msgWqueue   = 60
	msgInode    = 68
	byFamily    = 20 // SOCK_DIAG_BY_FAMILY
	allStates   = 0xffffffff
	cookieNone  = 0xffffffff // INET_DIAG_NOCOOKIE
	answerBytes = 64 << 10
	// attrInfo is INET_DIAG_INFO, the attribute carrying struct tcp_info,
	// asked for by bit attrInfo-1 of the request's idiag_ext;
	// tcpi_bytes_received sits at byte 128 of it and tcpi_segs_in at byte
	// 140 (linux/tcp.h, since Linux 4.1 and 4.2).
	attrInfo          = 2
	infoBytesReceived = 128
	infoSegsIn        = 140
)

func dump(fd int, family uint8, states uint32, lport, rport uint16, info bool) ([]Socket, error) {
	if states == 0 {
		states = allStates
	}
	req := make([]byte, unix.NLMSG_HDRLEN+reqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], byFamily)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	body := req[unix.NLMSG_HDRLEN:]
	body[0], body[1] = family, unix.IPPROTO_TCP
	if info {
		body[2] = 1 << (attrInfo - 1)
	}
	binary.NativeEndian.PutUint32(body[4:], states)
	id := body[reqSockid:]
	binary.BigEndian.PutUint16(id[0:], lport)
	binary.BigEndian.PutUint16(id[2:], rport)
	binary.NativeEndian.PutUint32(id[40:], cookieNone)
	binary.NativeEndian.PutUint32(id[44:], cookieNone)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("inet_diag request: %w", err)
	}
	var out []Socket
	buf := make([]byte, answerBytes)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("inet_diag answer: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("inet_diag answer: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
						return nil, fmt.Errorf("inet_diag: %w", syscall.Errno(-errno))
					}
				}
				return nil, errors.New("inet_diag: error message")
			}
			if s, ok := parse(m.Data); ok {
				out = append(out, s)
			}
		}
	}
}

// parse reads one struct inet_diag_msg.
func parse(b []byte) (Socket, bool) {
	if len(b) < msgLen {
		return Socket{}, false
	}
	s := Socket{Family: b[0], State: b[1]}
	id := b[msgSockid:]
	addr := func(raw []byte) netip.Addr {
		if s.Family == unix.AF_INET {
			return netip.AddrFrom4([4]byte(raw[:4]))
		}
		return netip.AddrFrom16([16]byte(raw[:16])).Unmap()
	}
	s.Local = netip.AddrPortFrom(addr(id[4:20]), binary.BigEndian.Uint16(id[0:]))
	s.Remote = netip.AddrPortFrom(addr(id[20:36]), binary.BigEndian.Uint16(id[2:]))
	s.Cookie = uint64(binary.NativeEndian.Uint32(id[40:])) | uint64(binary.NativeEndian.Uint32(id[44:]))<<32
	s.Unread = binary.NativeEndian.Uint32(b[msgRqueue:])
	s.Unsent = binary.NativeEndian.Uint32(b[msgWqueue:])
	s.Inode = binary.NativeEndian.Uint32(b[msgInode:])
	// The attributes follow the message, each a struct rtattr (length,
	// type) padded to 4 bytes.
	for a := b[msgLen:]; len(a) >= 4; {
		n := int(binary.NativeEndian.Uint16(a[0:]))
		if n < 4 || n > len(a) {
			break
		}
		if binary.NativeEndian.Uint16(a[2:]) == attrInfo && n >= 4+infoSegsIn+4 {
			s.SegsIn, s.HasInfo = binary.NativeEndian.Uint32(a[4+infoSegsIn:]), true
			s.BytesReceived = binary.NativeEndian.Uint64(a[4+infoBytesReceived:])
		}
		a = a[min((n+3)&^3, len(a)):]
	}
	return s, true
}

// Conn returns the sockets whose local end is local and remote end is
// remote, exactly (addresses compared unmapped), from both families'
// tables: none when the kernel has let the socket go, one for a live
// connection, and possibly a TIME_WAIT remnant of an earlier connection
// with the same four-tuple beside it. Any other socket that shares the
// ports is left out.
func Conn(local, remote netip.AddrPort) ([]Socket, error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	var out []Socket
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if fam == unix.AF_INET && !(local.Addr().Is4() && remote.Addr().Is4()) {
			continue
		}
		all, err := Dump(fam, 0, local.Port(), remote.Port())
		if err != nil {
			return nil, err
		}
		for _, s := range all {
			if s.Local == local && s.Remote == remote {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// Pinned is one connection's socket, followed by its cookie: Sample
// returns that socket, or says it is gone, and never another socket with
// the same four-tuple.
type Pinned struct {
	Local, Remote netip.AddrPort
	// Cookie is the socket's, once Pin has found it.
	Cookie uint64
	// Family is the socket's address family (AF_INET, or AF_INET6 for a
	// dual-stack socket with v4-mapped addresses).
	Family uint8
}

// ErrAmbiguous is Pin's error when the four-tuple names more than one
// socket that is not in TIME_WAIT: no sample can be told apart.
var ErrAmbiguous = errors.New("more than one live socket with this four-tuple")

// Pin finds the live socket (not TIME_WAIT) with local and remote as its
// ends and returns it pinned by its cookie. found is false (and err nil)
// when there is none.
func Pin(local, remote netip.AddrPort) (p Pinned, s Socket, found bool, err error) {
	socks, err := Conn(local, remote)
	if err != nil {
		return Pinned{}, Socket{}, false, err
	}
	var live []Socket
	for _, s := range socks {
		if s.State != TimeWait {
			live = append(live, s)
		}
	}
	switch len(live) {
	case 0:
		return Pinned{Local: local, Remote: remote}, Socket{}, false, nil
	case 1:
		return Pinned{Local: local, Remote: remote, Cookie: live[0].Cookie, Family: live[0].Family}, live[0], true, nil
	}
	return Pinned{}, Socket{}, false, fmt.Errorf("%v→%v: %w (%d)", local, remote, ErrAmbiguous, len(live))
}

// Sample reads the pinned socket again: ok is false once the kernel no
// longer has it (closed and done with, or reset). A socket with the same
// four-tuple and another cookie is not it.
//
// It asks the kernel for that one socket (a request without NLM_F_DUMP:
// inet_diag_find_one_icsk looks the four-tuple up in its hash tables and
// answers ESTALE when the socket found has another cookie, ENOENT when
// there is none), which costs a lookup, not a walk of every socket.
func (p Pinned) Sample() (s Socket, ok bool, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return Socket{}, false, fmt.Errorf("inet_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return Socket{}, false, fmt.Errorf("inet_diag SO_RCVTIMEO: %w", err)
	}
	req := make([]byte, unix.NLMSG_HDRLEN+reqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], byFamily)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	body := req[unix.NLMSG_HDRLEN:]
	body[0], body[1] = p.Family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(body[4:], allStates)
	id := body[reqSockid:]
	binary.BigEndian.PutUint16(id[0:], p.Local.Port())
	binary.BigEndian.PutUint16(id[2:], p.Remote.Port())
	putAddr := func(dst []byte, a netip.Addr) {
		if p.Family == unix.AF_INET {
			b := a.As4()
			copy(dst, b[:])
			return
		}
		b := a.As16() // an IPv4 address as its v4-mapped form
		copy(dst, b[:])
	}
	putAddr(id[4:20], p.Local.Addr())
	putAddr(id[20:36], p.Remote.Addr())
	binary.NativeEndian.PutUint32(id[40:], uint32(p.Cookie))
	binary.NativeEndian.PutUint32(id[44:], uint32(p.Cookie>>32))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return Socket{}, false, fmt.Errorf("inet_diag request: %w", err)
	}
	buf := make([]byte, 8<<10)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return Socket{}, false, fmt.Errorf("inet_diag answer: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return Socket{}, false, fmt.Errorf("inet_diag answer: %v", err)
	}
	m := msgs[0]
	if m.Header.Type == unix.NLMSG_ERROR {
		if len(m.Data) >= 4 {
			switch errno := syscall.Errno(-int32(binary.NativeEndian.Uint32(m.Data))); errno {
			case unix.ENOENT, unix.ESTALE:
				return Socket{}, false, nil // gone, or another socket now
			default:
				return Socket{}, false, fmt.Errorf("inet_diag: %w", errno)
			}
		}
		return Socket{}, false, errors.New("inet_diag: error message")
	}
	got, okParse := parse(m.Data)
	if !okParse || got.Cookie != p.Cookie || got.Local != p.Local || got.Remote != p.Remote {
		return Socket{}, false, nil // not the pinned socket: discarded
	}
	return got, true, nil
}
