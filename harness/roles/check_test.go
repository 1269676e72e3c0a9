package roles

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// CheckServe and CheckLoad word the refusals as serve's and loadgen's
// flags, wrapping the packages' errors.
func TestCheckMessages(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Budgets.Input = 0
	if err := CheckServe(reactors.LT, cfg); err == nil || err.Error() != "--budget-input = 0 (accepted: 1..1048576)" || !errors.Is(err, reactors.ErrConfig) {
		t.Errorf("CheckServe: %v", err)
	}
	cfg = reactors.DefaultConfig()
	cfg.Workers = 2
	if err := CheckServe(reactors.OneShot, cfg); err == nil || !strings.HasPrefix(err.Error(), "--workers = 2: oneshot") {
		t.Errorf("CheckServe oneshot workers: %v", err)
	}
	cfg.Callback = "50"
	if err := CheckServe(reactors.LT, cfg); err == nil || !strings.HasPrefix(err.Error(), "--callback: cost: parse") {
		t.Errorf("CheckServe callback: %v", err)
	}
	if err := CheckServe(reactors.LT, reactors.DefaultConfig()); err != nil {
		t.Errorf("CheckServe default: %v", err)
	}
	err := CheckLoad(loadgen.Config{Hot: 1, Duration: time.Second, Steady: 1})
	if err == nil || !errors.Is(err, loadgen.ErrConfig) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "--inflight = 0") || !strings.Contains(err.Error(), "--rate = 0") {
		t.Errorf("CheckLoad: %v", err)
	}
	if err := CheckLoad(loadgen.Config{Hot: 1, InFlight: 1, Duration: time.Second, DataAddr: "{addr}"}); err != nil {
		t.Errorf("CheckLoad with placeholders: %v", err)
	}
}
