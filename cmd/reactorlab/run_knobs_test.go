//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/loadgen"
)

// TestRunHasEveryLoadKnob: run defines one flag per knob of
// loadgen.Knobs, with the knob's help and default.
func TestRunHasEveryLoadKnob(t *testing.T) {
	c, _ := newRunCommand()
	for _, k := range loadgen.Knobs {
		f := c.Flags.Lookup(k.FlagName())
		if f == nil {
			t.Errorf("run has no --%s", k.FlagName())
			continue
		}
		if !strings.HasPrefix(f.Usage, k.Help) {
			t.Errorf("--%s: usage %q, want the knob's help %q", f.Name, f.Usage, k.Help)
		}
	}
}
