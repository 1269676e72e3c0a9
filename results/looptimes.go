package results

import "github.com/reactorlab/reactorlab/diagnose"

// loopShare computes a loop-time metric: the mean over the run's loop
// threads of the share fig takes from each, in per cent; absent without
// the figures, without a loop thread, or when a thread's is unknown (-1).
func loopShare(fig func(diagnose.ThreadShares) float64) func(*MeasuredRun) (float64, bool) {
	return func(run *MeasuredRun) (float64, bool) {
		if run.Result == nil || run.Result.LoopTimes == nil || len(run.Result.LoopTimes.Loops) == 0 {
			return 0, false
		}
		sum := 0.0
		for _, l := range run.Result.LoopTimes.Loops {
			v := fig(l)
			if v < 0 {
				return 0, false
			}
			sum += v
		}
		return 100 * sum / float64(len(run.Result.LoopTimes.Loops)), true
	}
}
