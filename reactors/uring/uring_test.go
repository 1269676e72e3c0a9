//go:build linux

package uring_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/reactors/uring"
)

func TestEndToEnd(t *testing.T) {
	stats := reactortest.EndToEnd(t, uring.New, reactors.DefaultConfig())
	if stats.Counters.Completions == 0 || stats.Counters.RingEnters == 0 {
		t.Errorf("served without the ring: %d completions, %d enters", stats.Counters.Completions, stats.Counters.RingEnters)
	}
	t.Logf("counters: %+v", stats.Counters)
}
