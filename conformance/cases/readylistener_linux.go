//go:build linux

package cases

import (
	"errors"
	"fmt"
	"net"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/inetdiag"
	"golang.org/x/sys/unix"
)

// epollIn and epollET are EPOLLIN and EPOLLET of linux/eventpoll.h as an
// fdinfo item's events mask carries them.
const (
	epollIn = 0x1
	epollET = 1 << 31
)

// readyListener looks once at the target's listening sockets on its data
// address: whether one has connections waiting in its accept queue while
// an epoll set of the target's process group holds it for EPOLLIN,
// level-triggered and armed (an EPOLLONESHOT item that has fired shows no
// EPOLLIN until it is re-armed). Every epoll_wait on such a set returns
// at once: a loop waiting in it cannot block. It says what it saw ("" when
// no listener is so), from the kernel's TCP tables (inet_diag: a
// listener's Unread is its accept queue) and each epoll descriptor's
// /proc/PID/fdinfo. An error says the tables or the sets could not be
// read.
func readyListener(inst conformance.Instance) (string, error) {
	g, ok := inst.(conformance.ProcessGroup)
	if !ok {
		return "", errors.New("the target has no process of its own")
	}
	tcp, err := net.ResolveTCPAddr("tcp", inst.Addr())
	if err != nil {
		return "", err
	}
	queued := map[uint64]uint32{} // listener inode → connections in its accept queue
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := inetdiag.Dump(fam, 1<<inetdiag.Listen, uint16(tcp.Port), 0)
		if err != nil {
			return "", fmt.Errorf("reading the kernel's TCP tables: %w", err)
		}
		for _, s := range socks {
			if s.Inode != 0 && s.Unread > 0 {
				queued[uint64(s.Inode)] = s.Unread
			}
		}
	}
	if len(queued) == 0 {
		return "", nil
	}
	pids, err := g.Group()
	if err != nil {
		return "", err
	}
	held, err := groupEpollItems(pids)
	if err != nil {
		return "", err
	}
	for _, h := range held {
		if n := queued[h.item.Ino]; n > 0 && h.item.Events&epollIn != 0 && h.item.Events&epollET == 0 {
			return fmt.Sprintf("the listening socket (inode %d) had %d connections in its accept queue while epoll descriptor %d of pid %d held it for EPOLLIN, level-triggered (events %#x)", h.item.Ino, n, h.fd, h.pid, h.item.Events), nil
		}
	}
	return "", nil
}
