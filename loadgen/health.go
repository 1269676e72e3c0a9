package loadgen

import "time"

// HealthCheck is what a health checker probing the target would
// have concluded from the control probes: a PING answered more than
// Config.ControlTimeout after its intended time is a false timeout (the
// target was alive, only late), and Config.RemovalAfter false timeouts in
// a row on one control connection are a false removal of the node, after
// which the checker re-adds it and counts again from zero. Only answers
// read in the measured period count (the warm-up's are left out, as in
// the "control" latency class); a PING never answered is no false timeout
// (it is counted as lost in the accounting, which makes the run invalid).
// FalseRemovals <= FalseTimeouts / Config.RemovalAfter always holds.
type HealthCheck struct {
	// FalseTimeouts counts the PINGs answered after Config.ControlTimeout.
	FalseTimeouts uint64 `json:"false_timeouts"`
	// FalseRemovals counts the runs of RemovalAfter consecutive false
	// timeouts on one control connection.
	FalseRemovals uint64 `json:"false_removals"`
}

// add sums b's counts into h.
func (h *HealthCheck) add(b HealthCheck) {
	h.FalseTimeouts += b.FalseTimeouts
	h.FalseRemovals += b.FalseRemovals
}

// healthChecker counts one control connection's false timeouts and
// removals online, one answer at a time (observe); streak is the false
// timeouts in a row since the last answer in time or the last removal,
// always < after.
type healthChecker struct {
	timeout int64 // ns
	after   int
	streak  int
	counts  HealthCheck
}

func newHealthChecker(timeout time.Duration, after int) healthChecker {
	return healthChecker{timeout: int64(timeout), after: max(after, 1)}
}

// observe judges one answered PING of latency ns: later than the timeout
// is a false timeout, and the after-th in a row a false removal (the
// streak then starts again); in time ends the streak.
func (h *healthChecker) observe(latency int64) {
	if latency <= h.timeout {
		h.streak = 0
		return
	}
	h.counts.FalseTimeouts++
	h.streak++
	if h.streak >= h.after {
		h.counts.FalseRemovals++
		h.streak = 0
	}
}
