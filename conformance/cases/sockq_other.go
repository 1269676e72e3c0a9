//go:build !linux

package cases

import (
	"errors"
	"net"
)

// connQueues needs Linux's inet_diag; elsewhere the cases that need it
// are inconclusive.
type connQueues struct{}

func pinQueues(conn *net.TCPConn) (*connQueues, error) {
	return nil, errors.New("socket queues are read with Linux's inet_diag")
}

func (cq *connQueues) sample(serverFirst bool) (sockQueues, error) {
	return sockQueues{}, errors.New("socket queues are read with Linux's inet_diag")
}

const (
	tcpEstablished = 1
	tcpFinWait1    = 4
	tcpFinWait2    = 5
	tcpCloseWait   = 8
)

func dialSmall(addr string) (*net.TCPConn, error) {
	return nil, errors.New("the small-buffer client needs Linux")
}

func kernelCapacity() (int64, string, error) {
	return 0, "", errors.New("kernel buffer sizes are read from Linux's /proc/sys")
}

func tcpSockets(fds []string) ([]string, error) {
	return nil, errors.New("TCP sockets are told apart with Linux's inet_diag")
}

func listenerInodes(addr string) (map[uint64]bool, error) {
	return nil, errors.New("listening sockets are found with Linux's inet_diag")
}
