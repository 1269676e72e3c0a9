package cases

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// TestOneLoopTweaks: the cases whose claim is about what one loop (or one
// ring) does give a design that runs several loops one data loop, so that
// every connection of the case meets on it: S1 (its bound counts one
// loop's turns, on a CPU of its own) on every multi-loop design, P3 (a
// completion comes back on the ring that submitted it, so a reused number
// tests something only on A's ring) on the multi-loop proactors alone,
// leaving the epoll designs' loops as they are. A one-loop design's
// configuration is what its Check accepts either way.
func TestOneLoopTweaks(t *testing.T) {
	multi := []reactors.DesignName{reactors.MainSub, reactors.ReusePort, reactors.SharedListener, reactors.UringReusePort, reactors.UringMainSub}
	for _, tc := range []struct {
		id   string
		want func(d reactors.DesignName) bool // the design gets one data loop
	}{
		{"S1", func(reactors.DesignName) bool { return true }},
		{"P3", designs.Completion},
	} {
		c, ok := Lookup(tc.id)
		if !ok || c.Setup.Tweak == nil {
			t.Fatalf("%s: not in the catalogue, or no tweak", tc.id)
		}
		for _, d := range multi {
			cfg := reactors.DefaultConfig()
			cfg.Loops = 4
			c.Setup.Tweak(d, &cfg)
			if got, want := cfg.DataLoops(), 4; tc.want(d) {
				if got != 1 {
					t.Errorf("%s on %s: %d data loops, want 1", tc.id, d, got)
				}
			} else if got != want {
				t.Errorf("%s on %s: %d data loops, want them left at %d", tc.id, d, got, want)
			}
			if err := designs.ValidateFor(d, cfg); err != nil {
				t.Errorf("%s on %s: the tweaked configuration is refused: %v", tc.id, d, err)
			}
		}
	}
}
