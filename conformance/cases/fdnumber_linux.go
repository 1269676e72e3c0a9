//go:build linux

package cases

import (
	"fmt"
	"os"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
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
