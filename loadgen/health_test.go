package loadgen

import (
	"testing"
	"time"
)

// TestHealthCheckerCounts: the checker's verdicts on answer latencies, one
// at a time: a false timeout for each answer after the timeout, a removal
// for each K in a row (the streak then starts again), an answer in time
// (at the timeout exactly included) ending the streak.
func TestHealthCheckerCounts(t *testing.T) {
	const late, onTime = 20 * time.Millisecond, 10 * time.Millisecond // timeout 10 ms
	for _, tc := range []struct {
		name               string
		after              int
		answers            []time.Duration
		timeouts, removals uint64
	}{
		{"none", 3, nil, 0, 0},
		{"all in time", 3, []time.Duration{0, onTime, time.Millisecond}, 0, 0},
		{"late, late, on time, late, late, late", 3, []time.Duration{late, late, onTime, late, late, late}, 5, 1},
		{"an answer in time ends the streak", 3, []time.Duration{late, late, onTime, late}, 3, 0},
		{"six late: two removals", 3, []time.Duration{late, late, late, late, late, late}, 6, 2},
		{"five late: the streak restarts after a removal", 3, []time.Duration{late, late, late, late, late}, 5, 1},
		{"K = 1: every timeout a removal", 1, []time.Duration{late, onTime, late}, 2, 2},
		{"just past the timeout", 2, []time.Duration{onTime + 1, onTime + 1}, 2, 1},
	} {
		h := newHealthChecker(10*time.Millisecond, tc.after)
		for _, d := range tc.answers {
			h.observe(int64(d))
		}
		if h.counts.FalseTimeouts != tc.timeouts || h.counts.FalseRemovals != tc.removals {
			t.Errorf("%s: %d false timeouts, %d false removals; want %d, %d", tc.name,
				h.counts.FalseTimeouts, h.counts.FalseRemovals, tc.timeouts, tc.removals)
		}
		if h.streak >= h.after {
			t.Errorf("%s: streak %d, not below K = %d", tc.name, h.streak, h.after)
		}
	}
}
