//go:build linux

package priothread_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/priothread"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, priothread.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}
