//go:build !linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// conformTarget: the suite's targets (epoll reactors, /proc measurements)
// exist on Linux only.
func conformTarget(spec string, faultSpecs []string, inProcess bool, grace time.Duration) (conformance.Target, error) {
	return nil, errors.New("reactorlab conform runs on Linux only")
}

// conformInLab: the lab is Linux only.
func conformInLab(ctx context.Context, args []string, grace time.Duration, reportFiles []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "reactorlab conform: --lab runs on Linux only")
	return 1
}
