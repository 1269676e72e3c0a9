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

// TestEndToEndOffloaded: with callbacks offloaded to a pool, the results
// come back through the loop's ingress (in its epoll set, which the ring
// polls) and leave by the ring's sends, every byte echoed.
func TestEndToEndOffloaded(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Workers = 2
	stats := reactortest.EndToEnd(t, uring.New, cfg)
	if stats.Counters.TasksOffloaded == 0 || stats.Counters.IngressItems == 0 {
		t.Errorf("nothing went through the pool: %d offloaded, %d ingress items", stats.Counters.TasksOffloaded, stats.Counters.IngressItems)
	}
}
