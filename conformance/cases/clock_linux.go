//go:build linux

package cases

import "github.com/reactorlab/reactorlab/reactors/timers"

// monoNow is CLOCK_MONOTONIC in ns, the clock frames' send times use.
func monoNow() uint64 { return uint64(timers.Now()) }
