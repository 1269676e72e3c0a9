package designs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// TestRegistryNamesAreUniqueAndParse: every registered design has a name
// of its own, Parse and Lookup find it, and an unknown name is refused with
// the list of names.
func TestRegistryNamesAreUniqueAndParse(t *testing.T) {
	seen := map[reactors.DesignName]bool{}
	for _, d := range designs.Names() {
		if d == "" || seen[d] {
			t.Errorf("design name %q is empty or registered twice", d)
		}
		seen[d] = true
		if got, err := designs.Parse(string(d)); err != nil || got != d {
			t.Errorf("Parse(%s) = %q, %v", d, got, err)
		}
		if b, err := designs.Lookup(d); err != nil || b.Name() != d {
			t.Errorf("Lookup(%s) = %v, %v", d, b, err)
		}
	}
	if len(seen) != 11 {
		t.Errorf("%d designs registered, want the 11 reference designs", len(seen))
	}
	if _, err := designs.Parse("nope"); err == nil || !strings.Contains(err.Error(), "accepted: "+designs.NameList()) {
		t.Errorf("Parse(nope): %v", err)
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
	for _, d := range designs.Names() {
		if err := designs.ValidateFor(d, cfg); err != nil {
			t.Errorf("%s refuses the default configuration: %v", d, err)
		}
	}
}

// TestCompletionNamesTheProactors: Completion is true for the designs
// that serve through an io_uring (one loop, and the two multi-loop
// layouts) and false for every epoll design and an unknown name.
func TestCompletionNamesTheProactors(t *testing.T) {
	want := []reactors.DesignName{reactors.Uring, reactors.UringReusePort, reactors.UringMainSub}
	for _, d := range designs.Names() {
		if got := designs.Completion(d); got != slices.Contains(want, d) {
			t.Errorf("Completion(%s) = %v", d, got)
		}
	}
	for _, d := range want {
		if !slices.Contains(designs.Names(), d) {
			t.Errorf("%s is not registered", d)
		}
	}
	if designs.Completion("nope") {
		t.Error("Completion(nope) = true")
	}
}
