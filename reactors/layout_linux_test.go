//go:build linux

package reactors_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	ltdesign "github.com/reactorlab/reactorlab/reactors/lt"
	"github.com/reactorlab/reactorlab/reactors/oneshot"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

// pooledShared is oneshot with a Check that takes a pool.
type pooledShared struct{ oneshot.Design }

func (pooledShared) Check(reactors.Config) error { return nil }

// sharedLevel is lt's flat policy on two loops sharing one epoll fd.
type sharedLevel struct{ ltdesign.Design }

func (sharedLevel) Layout(*reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: 2, Shared: true}
}

// badControlLoop puts the control listener on a loop that does not exist.
type badControlLoop struct{ ltdesign.Design }

func (badControlLoop) Layout(*reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: 1, ControlLoop: 1}
}

// ringInEverySet is lt's flat policy on the completion path with one
// listener in every loop's set: no ring can share a listener's accept.
type ringInEverySet struct{ ltdesign.Design }

func (ringInEverySet) Layout(*reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: 2, Listener: reactors.ListenerInEverySet, Completion: true}
}

// TestNewRefusesABrokenLayout: New holds a design to Layout's invariants,
// whatever its Check accepted, and leaves no descriptor open.
func TestNewRefusesABrokenLayout(t *testing.T) {
	before := reactortest.TakeLeaks()
	cfg := reactors.DefaultConfig()
	pooled := cfg
	pooled.Workers = 2
	for _, tc := range []struct {
		name   string
		design reactors.Policy
		cfg    reactors.Config
		want   string
	}{
		{"shared layout with a pool", pooledShared{}, pooled, "shared layout has no ingress"},
		{"shared layout, level-triggered", sharedLevel{}, cfg, "shared layout must register connections one-shot"},
		{"control loop out of range", badControlLoop{}, cfg, "control loop 1 of 1"},
		{"completion layout, a listener in every set", ringInEverySet{}, cfg, "each listener accepted on one ring"},
	} {
		r, err := reactors.New(tc.design, tc.cfg)
		if err == nil {
			r.Stop()
			t.Errorf("%s: New accepted it", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
		if tc.name == "shared layout with a pool" && !errors.Is(err, reactors.ErrConfig) {
			t.Errorf("%s: %v does not wrap ErrConfig", tc.name, err)
		}
	}
	reactortest.CheckNoLeaks(t, before)
}
