//go:build linux

package et_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/et"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, et.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}
