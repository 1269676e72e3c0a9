package loadgen

import (
	"fmt"
	"slices"

	"github.com/reactorlab/reactorlab/results/record"
)

// checkFigures are the measured figures the self-check decides from.
type checkFigures struct {
	Steady    int     // steady sources
	Rate      float64 // their target rate in all, frames/s
	MeasuredS float64 // the measured part of the sending phase, s
	// Scheduled is the steady frames intended in the measured time (0: no
	// steady check); RateRatio is those sent / Scheduled.
	Scheduled    uint64
	RateRatio    float64
	AchievedRate float64 // frames/s sent by the steady sources
	SendLagP99Us float64
	SendLagMaxUs float64
	// Blocked is the steady sources' waits by cause ("window", "socket",
	// "fault"), source-seconds.
	Blocked     map[string]float64
	LoopBusy    float64 // fraction of the run the loop thread was on a CPU
	Hot         int     // hot sources
	InFlight    int     // K per hot source
	HotEchoRate float64 // frames/s answered to hot sources
}

// Thresholds of the self-check.
const (
	maxSendLagP99Us = 1000 // the generator wrote late beyond this
	minRateRatio    = 0.99 // steady sources kept the rate within 1%
	maxBlockedShare = 0.01 // of source-seconds waiting on the target, with the rate kept
	maxLoopBusy     = 0.9  // the loop thread saturated from this
)

// judge decides which side limited a run, and why, from its figures alone.
// The generator (LimitLoadgen) when its send lag p99 reached 1 ms, when
// the steady sources fell short of the rate by more than 1% without
// waiting on the target for at least half the shortfall, or when its loop
// thread was on a CPU 90% of the run; the target (LimitTarget) when the
// steady sources waited on it (window or socket full, more than 1% of
// their time, or half the shortfall), or on a wire fault for half the
// shortfall, or when there are hot sources (a closed loop sends as fast as
// the target answers). The generator's reasons come first and decide the
// limit when both sides have some.
func judge(f checkFigures) (limit string, reasons []string) {
	return limitOf(judgeParts(f))
}

// judgeParts is judge's reasons, the generator's and the target's apart.
func judgeParts(f checkFigures) (loadgenWhy, targetWhy []string) {
	if f.Steady > 0 && f.Scheduled > 0 {
		if f.SendLagP99Us >= maxSendLagP99Us {
			loadgenWhy = append(loadgenWhy, fmt.Sprintf("send-lag p99 %.0f µs >= 1 ms (max %.0f µs): the generator wrote late", f.SendLagP99Us, f.SendLagMaxUs))
		}
		byTarget := f.Blocked["window"] + f.Blocked["socket"]
		shortfall := (1 - f.RateRatio) * f.MeasuredS * float64(f.Steady) // source-seconds missing
		switch {
		case f.RateRatio >= minRateRatio && byTarget <= maxBlockedShare*f.MeasuredS*float64(f.Steady):
		case byTarget > 0 && byTarget >= 0.5*shortfall:
			targetWhy = append(targetWhy, fmt.Sprintf("steady sources waited on the target %.3f s in all (window full %.3f s, socket full %.3f s); achieved %.0f of %.0f frames/s (%.2f%%)",
				byTarget, f.Blocked["window"], f.Blocked["socket"], f.AchievedRate, f.Rate, 100*f.RateRatio))
		case f.Blocked["fault"] >= 0.5*shortfall:
			targetWhy = append(targetWhy, fmt.Sprintf("steady sources waited on wire faults %.3f s in all; achieved %.0f of %.0f frames/s (%.2f%%)",
				f.Blocked["fault"], f.AchievedRate, f.Rate, 100*f.RateRatio))
		default:
			loadgenWhy = append(loadgenWhy, fmt.Sprintf("achieved %.0f of %.0f frames/s (%.2f%%, outside 1%%) without waiting on the target",
				f.AchievedRate, f.Rate, 100*f.RateRatio))
		}
	}
	if f.LoopBusy >= maxLoopBusy {
		loadgenWhy = append(loadgenWhy, fmt.Sprintf("the generator's loop thread was on a CPU %.0f%% of the run: saturated", 100*f.LoopBusy))
	}
	if f.Hot > 0 {
		targetWhy = append(targetWhy, fmt.Sprintf("hot sources (%d, %d frames in flight each) wait for the target by design (closed loop): %.0f frames/s answered", f.Hot, f.InFlight, f.HotEchoRate))
	}
	return loadgenWhy, targetWhy
}

// limitOf is the limit the reasons make: the generator's reasons come
// first and decide it when both sides have some.
func limitOf(loadgenWhy, targetWhy []string) (limit string, reasons []string) {
	switch {
	case len(loadgenWhy) > 0:
		limit = LimitLoadgen
	case len(targetWhy) > 0:
		limit = LimitTarget
	default:
		limit = LimitNone
	}
	return limit, append(loadgenWhy, targetWhy...)
}

// judgeChurn adds the churn's part to sc (churn nil: no churn), from the
// churn lag in rec (over the measured time) and the counts: the generator
// was the limit when it opened churn connections late (lag p99 >= 1 ms);
// the target when connections were skipped because churnMax were open
// (it answered too slowly for the cap).
func (sc *SelfCheck) judgeChurn(rec *record.Recorder, churn *ChurnOutcome, churnMax int) {
	if churn == nil {
		return
	}
	var loadgenWhy, targetWhy []string
	if h, ok := rec.Histogram(ClassChurnLag); ok && h.TotalCount() > 0 {
		sc.ChurnLagP99Us = float64(h.ValueAtPercentile(99)) / 1e3
		sc.ChurnLagMaxUs = float64(h.Max()) / 1e3
		if sc.ChurnLagP99Us >= maxSendLagP99Us {
			loadgenWhy = append(loadgenWhy, fmt.Sprintf("churn connects p99 %.0f µs behind their instants >= 1 ms (max %.0f µs): the generator opened them late",
				sc.ChurnLagP99Us, sc.ChurnLagMaxUs))
		}
	}
	if churn.Skipped > 0 {
		targetWhy = append(targetWhy, fmt.Sprintf("%d of %d churn connections skipped: churn-max = %d were open (the target answered too slowly for the cap)",
			churn.Skipped, churn.Scheduled, churnMax))
	}
	if len(loadgenWhy)+len(targetWhy) == 0 {
		return
	}
	// Copies: limitOf's Reasons share their array with loadgenReasons.
	target := append(slices.Clone(sc.Reasons[len(sc.loadgenReasons):]), targetWhy...)
	sc.loadgenReasons = append(slices.Clone(sc.loadgenReasons), loadgenWhy...)
	sc.Limit, sc.Reasons = limitOf(slices.Clone(sc.loadgenReasons), target)
}
