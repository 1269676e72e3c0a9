//go:build !linux

package cases

import "time"

var start = time.Now()

// monoNow stands in for CLOCK_MONOTONIC where the targets do not run
// (the suite's targets are Linux-only); it keeps the package buildable.
func monoNow() uint64 { return uint64(time.Since(start)) }
