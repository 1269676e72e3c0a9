package loadgen

import (
	"testing"
	"time"
)

// TestProgressCountsDataOnly: a progress report's frame counts and rate are
// the data connections'; control PINGs are counted apart. A run of control
// probes alone (hot = 0, steady = 0) reports no data frames and a rate of
// 0, as its summary does, not the PINGs as data.
func TestProgressCountsDataOnly(t *testing.T) {
	ctl := Accounting{Sent: 100, Echoed: 100}
	p := newProgress(2*time.Second, true, Accounting{}, ctl, 0, time.Second)
	if p.Sent != 0 || p.Echoed != 0 || p.Rate != 0 {
		t.Errorf("control probes only: sent %d echoed %d rate %v, want 0 data frames", p.Sent, p.Echoed, p.Rate)
	}
	if p.ControlSent != 100 || p.ControlEchoed != 100 {
		t.Errorf("control sent %d echoed %d, want 100 and 100", p.ControlSent, p.ControlEchoed)
	}
	data := Accounting{Sent: 5000, Echoed: 4990}
	p = newProgress(3*time.Second, true, data, ctl, 2990, 500*time.Millisecond)
	if p.Sent != 5000 || p.Echoed != 4990 || p.Rate != 4000 {
		t.Errorf("data: sent %d echoed %d rate %v, want 5000, 4990, 4000 frames/s (2000 in 0.5 s)", p.Sent, p.Echoed, p.Rate)
	}
	if p.Elapsed != 3*time.Second || !p.Measuring {
		t.Errorf("elapsed %v measuring %v", p.Elapsed, p.Measuring)
	}
}
