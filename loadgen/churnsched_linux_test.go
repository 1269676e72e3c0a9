//go:build linux

package loadgen

import (
	"slices"
	"testing"
	"time"
)

// TestChurnScheduleDealt: the churn's bursts come at ChurnRate/ChurnBurst
// a second, and dealt over any number of loops they are the one loop's
// schedule, instant for instant (within the 1 ns of float rounding), and
// the loops' caps add up to ChurnMax.
func TestChurnScheduleDealt(t *testing.T) {
	cfg := Config{ChurnRate: 3000, ChurnBurst: 4, ChurnMax: 10, Duration: time.Second}.WithDefaults()
	const span = int64(time.Second)
	instants := func(ch *churner) []int64 {
		var out []int64
		for k := uint64(0); ch.intended(k) < span; k++ {
			out = append(out, ch.intended(k))
		}
		return out
	}
	one := instants(newChurner(&loop{cfg: cfg}, 0, 1, nil))
	if want := 750; len(one) != want { // 3000/s in bursts of 4
		t.Fatalf("one loop: %d bursts in 1 s, want %d", len(one), want)
	}
	for n := 2; n <= 7; n++ {
		var all []int64
		limits := 0
		for i := range n {
			ch := newChurner(&loop{cfg: cfg}, i, n, nil)
			all = append(all, instants(ch)...)
			limits += ch.limit
			if ch.burst != cfg.ChurnBurst || ch.limit < 1 {
				t.Errorf("%d loops, loop %d: burst %d, limit %d", n, i, ch.burst, ch.limit)
			}
		}
		slices.Sort(all)
		if len(all) != len(one) {
			t.Errorf("%d loops: %d bursts in all, one loop has %d", n, len(all), len(one))
			continue
		}
		for k := range one {
			if d := all[k] - one[k]; d < -1 || d > 1 {
				t.Errorf("%d loops: burst %d at %d ns, one loop's at %d", n, k, all[k], one[k])
				break
			}
		}
		if limits != cfg.ChurnMax {
			t.Errorf("%d loops: caps add up to %d, want churn-max %d", n, limits, cfg.ChurnMax)
		}
	}
}
