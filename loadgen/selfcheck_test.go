package loadgen

import (
	"strings"
	"testing"
)

// TestJudge covers every branch of the self-check's verdict: no limit, each
// of the generator's reasons, each of the target's, and both at once (the
// generator's reasons come first and set the limit).
func TestJudge(t *testing.T) {
	// kept: one steady source kept 1000 frames/s for 10 s without waiting.
	kept := checkFigures{Steady: 1, Rate: 1000, MeasuredS: 10, Scheduled: 10000, RateRatio: 1, AchievedRate: 1000,
		SendLagP99Us: 50, SendLagMaxUs: 200, LoopBusy: 0.3}
	with := func(f func(*checkFigures)) checkFigures {
		c := kept
		f(&c)
		return c
	}
	short := func(c *checkFigures) { c.RateRatio, c.AchievedRate = 0.9, 900 } // 1 source-second missing
	cases := []struct {
		name  string
		in    checkFigures
		limit string
		want  []string // each in its own reason, in order
	}{
		{"none", kept, LimitNone, nil},
		{"none/at-1%", with(func(c *checkFigures) { c.RateRatio = 0.99; c.Blocked = map[string]float64{"window": 0.1} }), LimitNone, nil},
		{"none/no-steady", checkFigures{LoopBusy: 0.1}, LimitNone, nil},
		{"none/nothing-scheduled", with(func(c *checkFigures) { c.Scheduled, c.RateRatio, c.SendLagP99Us = 0, 0, 5000 }), LimitNone, nil},
		{"loadgen/send-lag", with(func(c *checkFigures) { c.SendLagP99Us = 1000 }), LimitLoadgen, []string{"send-lag p99 1000 µs"}},
		{"loadgen/rate", with(short), LimitLoadgen, []string{"achieved 900 of 1000 frames/s (90.00%, outside 1%) without waiting"}},
		{"loadgen/rate-little-wait", with(func(c *checkFigures) { short(c); c.Blocked = map[string]float64{"window": 0.4, "fault": 0.4} }),
			LimitLoadgen, []string{"without waiting on the target"}},
		{"loadgen/busy", with(func(c *checkFigures) { c.LoopBusy = 0.9 }), LimitLoadgen, []string{"on a CPU 90% of the run: saturated"}},
		{"target/window", with(func(c *checkFigures) { short(c); c.Blocked = map[string]float64{"window": 0.5} }),
			LimitTarget, []string{"waited on the target 0.500 s in all (window full 0.500 s, socket full 0.000 s)"}},
		{"target/socket", with(func(c *checkFigures) { short(c); c.Blocked = map[string]float64{"socket": 0.7} }),
			LimitTarget, []string{"(window full 0.000 s, socket full 0.700 s)"}},
		{"target/blocked-rate-kept", with(func(c *checkFigures) { c.Blocked = map[string]float64{"window": 0.2} }),
			LimitTarget, []string{"waited on the target 0.200 s"}},
		{"target/fault", with(func(c *checkFigures) { short(c); c.Blocked = map[string]float64{"fault": 0.5} }),
			LimitTarget, []string{"waited on wire faults 0.500 s"}},
		{"target/hot", checkFigures{Hot: 2, InFlight: 8, HotEchoRate: 5e4, LoopBusy: 0.5}, LimitTarget,
			[]string{"hot sources (2, 8 frames in flight each) wait for the target by design (closed loop): 50000 frames/s"}},
		{"both", with(func(c *checkFigures) {
			short(c)
			c.Blocked = map[string]float64{"window": 1}
			c.SendLagP99Us, c.LoopBusy, c.Hot, c.InFlight = 2000, 0.95, 1, 4
		}), LimitLoadgen, []string{"send-lag p99 2000 µs", "saturated", "waited on the target 1.000 s", "hot sources (1, 4 frames"}},
	}
	for _, tc := range cases {
		limit, reasons := judge(tc.in)
		if limit != tc.limit || len(reasons) != len(tc.want) {
			t.Errorf("%s: limit %q, reasons %q; want %q with %d reasons", tc.name, limit, reasons, tc.limit, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(reasons[i], w) {
				t.Errorf("%s: reason %d %q does not say %q", tc.name, i, reasons[i], w)
			}
		}
	}
}
