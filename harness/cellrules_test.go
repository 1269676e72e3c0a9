package harness

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
)

// SplitFault places a wire fault on the wire (canonical), a reactor fault
// in the reactor's configuration, and refuses a reactor fault without a
// reactor and what is neither.
func TestSplitFault(t *testing.T) {
	var rf reactors.Faults
	if w, err := SplitFault("half-packets", false, &rf); err != nil || w == "" {
		t.Errorf("half-packets: wire %q, error %v; want a wire fault", w, err)
	}
	if w, err := SplitFault("no-drain", true, &rf); err != nil || w != "" || fmt.Sprintf("%+v", rf) == fmt.Sprintf("%+v", reactors.Faults{}) {
		t.Errorf("no-drain: wire %q, error %v, faults %+v; want a reactor fault switched on", w, err, rf)
	}
	var fe *FaultError
	if _, err := SplitFault("no-drain", false, &rf); !errors.As(err, &fe) || fe.Reactor != nil || !errors.Is(err, faults.ErrSpec) {
		t.Errorf("no-drain without a reactor: %v; want a FaultError with no reactor refusal", err)
	}
	_, err := SplitFault("gremlins", true, &rf)
	if !errors.As(err, &fe) || !errors.Is(err, reactors.ErrConfig) || !errors.Is(err, faults.ErrSpec) {
		t.Fatalf("gremlins: %v; want a FaultError wrapping both refusals", err)
	}
	for _, w := range []string{`"gremlins": neither a wire fault (half-packets`, "nor a reactor fault (", "no-drain"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("gremlins: %q lacks %q", err, w)
		}
	}
}
