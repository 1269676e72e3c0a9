//go:build linux

package lt_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, lt.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}
