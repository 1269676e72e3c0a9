//go:build linux

package conformance

import (
	"fmt"
	"net"
	"slices"

	"github.com/reactorlab/reactorlab/internal/inetdiag"
	"github.com/reactorlab/reactorlab/internal/procfs"
)

// ServingProcesses returns the pids of the target's process group that
// hold one of its listening sockets (the processes that accept its
// connections; several SO_REUSEPORT workers have one each), found by the
// sockets' inodes in the kernel's TCP tables and the group's descriptor tables,
// and every pid of the group. It returns an error when the target has no
// process of its own or no process of it holds a listener.
func ServingProcesses(inst Instance) (serving, group []int, err error) {
	g, ok := inst.(ProcessGroup)
	if !ok {
		return nil, nil, fmt.Errorf("the target has no process of its own")
	}
	tcp, err := net.ResolveTCPAddr("tcp", inst.Addr())
	if err != nil {
		return nil, nil, err
	}
	inodes, err := inetdiag.ListeningInodes(uint16(tcp.Port))
	if err != nil {
		return nil, nil, err
	}
	group, err = g.Group()
	if err != nil {
		return nil, nil, err
	}
	for _, pid := range group {
		fds, _ := procfs.ReadFds(pid)
		if slices.ContainsFunc(fds, func(f procfs.Fd) bool { ino, ok := f.SocketInode(); return ok && inodes[ino] }) {
			serving = append(serving, pid)
		}
	}
	if len(serving) == 0 {
		return nil, group, fmt.Errorf("no process of the target's group holds a socket listening on %s", inst.Addr())
	}
	return serving, group, nil
}
