//go:build linux

package prio_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/prio"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, prio.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}
