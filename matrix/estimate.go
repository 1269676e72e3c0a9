package matrix

import "time"

// runOverhead is what a run costs beyond its load's warm-up and duration:
// the lab's setup and audit, the processes' start and stop, and the drain,
// which ends as soon as every frame is answered. Measured on 2 cores
// (2026-12-01, lab mode, the reference reactors): 0.06–0.16 s a run in the
// quick suite (32 runs of 4 s: 4.06–4.16 s each), 0.12–0.23 s in priority
// (24 runs of 10 s).
const runOverhead = 150 * time.Millisecond

// specOverhead is what a spec costs beyond its runs: the process's start,
// the manifest, and rendering the reports (report.html's plots). Measured
// 1.1 s (quick) and 1.9 s (priority).
const specOverhead = 2 * time.Second

// estimate is the expected wall time of a plan's runs: each one's hot
// lead (the hot sources alone, before the others connect), warm-up and
// duration, and the overhead.
func estimate(plan []PlannedRun) time.Duration {
	var d time.Duration
	for _, p := range plan {
		d += p.Cell.Load.HotLead + p.Cell.Load.Warmup + p.Cell.Load.Duration + runOverhead
	}
	return d
}

// Estimate is the expected wall time of shard sh of specs: each run's
// hot lead, warm-up and duration plus a measured per-run overhead, and a measured
// per-spec overhead for the reports (quick: 2m15s estimated, 2m12s
// measured; priority: 20m30s estimated, 20m25s measured). A spec without
// runs in the shard costs nothing.
func Estimate(specs []*Spec, sh Shard) time.Duration {
	var d time.Duration
	for _, s := range specs {
		d += EstimatePlan(s.Plan(sh))
	}
	return d
}

// EstimatePlan is the expected wall time of the runs of plan (a spec's
// plan, or what is left of it), the reports included.
func EstimatePlan(plan []PlannedRun) time.Duration {
	if len(plan) == 0 {
		return 0
	}
	return estimate(plan) + specOverhead
}

// FormatEstimate prints an estimate as the matrix's start line and --list
// show it: rounded to 5 s ("2m15s"), or to 1 s below a minute.
func FormatEstimate(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(5 * time.Second).String()
}

func fmtEstimate(d time.Duration) string {
	return FormatEstimate(d)
}
