//go:build !linux

package main

import (
	"errors"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// conformTarget: the suite's targets (epoll reactors, /proc measurements)
// exist on Linux only.
func conformTarget(spec string, faultSpecs []string, inProcess bool, grace time.Duration) (conformance.Target, error) {
	return nil, errors.New("reactorlab conform runs on Linux only")
}
