//go:build !linux

package cases

import (
	"errors"

	"github.com/reactorlab/reactorlab/conformance"
)

// readyListener needs Linux's inet_diag and /proc.
func readyListener(inst conformance.Instance) (string, error) {
	return "", errors.New("a listener's accept queue and epoll sets are read from Linux's inet_diag and /proc")
}
