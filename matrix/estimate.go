package matrix

import "time"

// runOverhead is what a run costs beyond its load's warm-up and duration:
// the lab's setup and audit, the processes' start and stop, and the drain,
// which ends as soon as every frame is answered (measured here ≈ 0.4–0.8 s
// a run).
const runOverhead = 700 * time.Millisecond

// estimate is the expected wall time of a plan.
func estimate(plan []PlannedRun) time.Duration {
	var d time.Duration
	for _, p := range plan {
		d += p.Cell.Warmup + p.Cell.Duration + runOverhead
	}
	return d
}

func fmtEstimate(d time.Duration) string {
	return d.Round(time.Second).String()
}
