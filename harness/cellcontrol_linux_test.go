//go:build linux

package harness

import (
	"slices"
	"testing"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/target"
)

// A black-box Target with {control} serves a control address of its own:
// the lab waits for it, and it is given it as REACTORLAB_CONTROL_LISTEN
// too; without {control}, data and control share one address.
func TestTargetControlAddress(t *testing.T) {
	for _, tc := range []struct {
		target  string
		control bool
	}{
		{"./srv --listen {addr} --control {control}", true},
		{"./srv --listen {addr}", false},
	} {
		spec, _ := CellSpec{Target: target.Command(tc.target)}.labSpec()
		env := proc.ControlListenEnv + "=" + lab.ControlPlaceholder
		if spec.Control != tc.control || slices.Contains(spec.Server.Env, env) != tc.control {
			t.Errorf("target %q: Control %v, env %v; want a control address %v", tc.target, spec.Control, spec.Server.Env, tc.control)
		}
	}
}
