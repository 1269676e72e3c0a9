//go:build !linux

package cases

import (
	"errors"
	"net"

	"github.com/reactorlab/reactorlab/conformance"
)

// serverPids and serverFd need Linux's /proc and inet_diag: elsewhere no
// descriptor number is found, and the case that needs one is inconclusive.
func serverPids(c *conformance.C) ([]int, error) { return nil, nil }

func serverFd(pids []int, socks *connQueues) (fd int, ino uint64, why string) {
	return -1, 0, "descriptor numbers are read from Linux's /proc"
}

func holdsSocket(pids []int, fd int, ino uint64) bool { return false }

// unconnected needs Linux: elsewhere newSocketFor refuses.
type unconnected struct{}

func newSocketFor(addr string) (*unconnected, error) {
	return nil, errors.New("a socket made before it connects needs Linux")
}

func (u *unconnected) Connect() error          { return errors.ErrUnsupported }
func (u *unconnected) Conn() (net.Conn, error) { return nil, errors.ErrUnsupported }
func (u *unconnected) Close() error            { return nil }
