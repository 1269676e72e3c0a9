package designs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// TestRegistryMatchesTheNames: every name in reactors.Designs has exactly
// one registered design, in the same order, and nothing else is
// registered, so a name that parses can be built.
func TestRegistryMatchesTheNames(t *testing.T) {
	if len(designs.All) != len(reactors.Designs) {
		t.Fatalf("%d designs registered, %d named", len(designs.All), len(reactors.Designs))
	}
	for i, b := range designs.All {
		if b.Name() != reactors.Designs[i] {
			t.Errorf("registry entry %d is %s, reactors.Designs[%d] is %s", i, b.Name(), i, reactors.Designs[i])
		}
		got, err := designs.Lookup(reactors.Designs[i])
		if err != nil || got.Name() != reactors.Designs[i] {
			t.Errorf("Lookup(%s) = %v, %v", reactors.Designs[i], got, err)
		}
	}
}

// TestValidateForNamesTheField checks the three kinds of refusal: an
// unknown design (listing the names), a field every design refuses, and a
// combination one design refuses.
func TestValidateForNamesTheField(t *testing.T) {
	cfg := reactors.DefaultConfig()
	if err := designs.ValidateFor("nope", cfg); !errors.Is(err, reactors.ErrConfig) || !strings.Contains(err.Error(), "accepted: lt, et, oneshot, prio, prio-thread") {
		t.Errorf("unknown design: %v", err)
	}
	bad := cfg
	bad.MaxEvents = 0
	if err := designs.ValidateFor(reactors.LT, bad); !errors.Is(err, reactors.ErrConfig) || !strings.Contains(err.Error(), "max-events") {
		t.Errorf("max-events 0: %v", err)
	}
	pooled := cfg
	pooled.Workers = 1
	if err := designs.ValidateFor(reactors.OneShot, pooled); !errors.Is(err, reactors.ErrConfig) || !strings.Contains(err.Error(), "workers = 1") {
		t.Errorf("oneshot with workers: %v", err)
	}
	for _, d := range reactors.Designs {
		if err := designs.ValidateFor(d, cfg); err != nil {
			t.Errorf("%s refuses the default configuration: %v", d, err)
		}
	}
}
