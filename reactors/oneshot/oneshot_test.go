//go:build linux

package oneshot_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/oneshot"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, oneshot.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}
