//go:build linux

package loadgen

// The self-check's gates: statistical checks of the whole run's figures,
// each from samples the loops logged (record.SampleLog) or from the
// recorder's histograms.

import (
	"fmt"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

const (
	// gateBlock and gateBlocks size each loop's sample logs: blocks of
	// 256 consecutive samples, at most 64 kept (16,384 samples spread
	// over the run).
	gateBlock  = 256
	gateBlocks = 64
	// maxExpFit bounds the gaps the Anderson–Darling test takes: it is so
	// sensitive at large n that a generator's harmless imprecision would
	// fail it, while a process whose gaps are not exponential (uniform,
	// say) fails it at any n in the hundreds. Bunching at one instant is
	// the dispersion test's: its zero gaps are below any resolution.
	maxExpFit = 1000
	// maxExpFitResolution is the largest resolution, in mean gaps, at which
	// the gaps beyond it are still tested against the exponential: the lack
	// of memory holds for exact gaps, and a send delay that is a fair part
	// of a gap shifts the long gaps too (simulated: delays of half a mean
	// gap rejected 7 of 100 exact Poisson runs at the 1% level; a send
	// grain near the mean gap, 100 of 100: at 21,000 frames/s a plain echo
	// gave A² 97).
	maxExpFitResolution = 0.1
	// minResolution is the finest resolution the arrival tests assume:
	// the loop's wakeups are not placed closer than this.
	minResolution = 10 * time.Microsecond
)

// openSampleLogs makes the loop's logs of what the gates test.
func (l *loop) openSampleLogs() {
	l.sentLog = record.NewSampleLog(gateBlock, gateBlocks)
	l.steadyLog = record.NewSampleLog(gateBlock, gateBlocks)
	l.hotLog = record.NewSampleLog(gateBlock, gateBlocks)
	l.ctrlLog = record.NewSampleLog(gateBlock, gateBlocks)
}

// gates judges the whole run (r's self-check and recorder set): the rate,
// the arrivals, and for each kind of source with answers logged, the
// independence of its latencies (open loops only), their stationarity,
// and the samples for the headline percentile.
func (g *group) gates(r *Result) []Gate {
	res := g.resolution()
	gs := []Gate{g.rateGate(r.SelfCheck), g.arrivalsGate(r, res)}
	if r.Precision != nil {
		gs = append(gs, precisionGate(r.Precision))
	}
	for _, k := range []struct {
		kind  connKind
		log   func(*loop) *record.SampleLog
		class string // the recorder's class holding this kind's latencies; "": none alone
	}{
		{kindSteady, func(l *loop) *record.SampleLog { return l.steadyLog }, steadyClass(g.cfg)},
		{kindHot, func(l *loop) *record.SampleLog { return l.hotLog }, hotClass(g.cfg)},
		{kindControl, func(l *loop) *record.SampleLog { return l.ctrlLog }, ClassControl},
	} {
		if !g.has(k.kind) {
			continue
		}
		label := k.kind.String()
		var runs [][]float64
		var timed []stats.Sample
		for _, l := range g.loops {
			log := k.log(l)
			for _, b := range log.Blocks() {
				run := make([]float64, len(b.Samples))
				for i, s := range b.Samples {
					run[i] = float64(s.Value)
					timed = append(timed, stats.Sample{At: s.At - l.measureFrom, Value: s.Value})
				}
				runs = append(runs, run)
			}
		}
		if k.kind == kindHot {
			gs = append(gs, Gate{Name: GateIndependence, Class: label, Verdict: GateNotJudged,
				Figure: "a closed loop: each frame is sent when one is answered, so consecutive latencies share the queue by design"})
		} else {
			g := independenceGate(label, runs)
			g.Histogram = k.class
			gs = append(gs, g)
		}
		gs = append(gs, stationarityGate(label, timed, g.measuredSpan()))
		if k.class != "" {
			if h, ok := r.Recorder.Histogram(k.class); ok {
				gs = append(gs, samplesGate(label, h))
			}
		}
	}
	return gs
}

// steadyClass is the recorder's class of the steady sources' latencies.
func steadyClass(cfg Config) string {
	if cfg.Hot > 0 {
		return ClassSteady
	}
	return ClassData
}

// hotClass is the recorder's class of the hot sources' latencies alone:
// none when steady sources share ClassData.
func hotClass(cfg Config) string {
	if cfg.Steady > 0 {
		return ""
	}
	return ClassData
}

// has reports whether the run has sources of kind.
func (g *group) has(kind connKind) bool {
	switch kind {
	case kindHot:
		return g.cfg.Hot > 0
	case kindSteady:
		return g.cfg.Steady > 0
	case kindControl:
		return g.cfg.ControlEvery > 0
	}
	return false
}

// measuredSpan is the measured time every loop sent in: from the start of
// measuring to the earliest end of sending (a run interrupted ends early).
func (g *group) measuredSpan() int64 {
	span := int64(-1)
	for _, l := range g.loops {
		if s := l.sendStopped - l.measureFrom; span < 0 || s < span {
			span = s
		}
	}
	return max(span, 0)
}

// resolution is how close to its intended time the generator placed its
// sends as a rule: its send grain, its send lag's p90 (the busiest
// loop's), at least minResolution. Not a higher percentile: a few sends a
// stall held are a few of a run's hundreds, and a busy machine's one
// 24-ms stall made a p99 of 1,200 sends so coarse that a period of 40 ms
// could not be judged; what the stalls bunch, the tests see.
func (g *group) resolution() int64 {
	r := int64(minResolution)
	for _, l := range g.loops {
		r = max(r, l.grain)
		if h, ok := l.rec.Histogram(ClassSendLag); ok && h.TotalCount() > 0 {
			r = max(r, h.ValueAtPercentile(90))
		}
	}
	return r
}

// rateGate is the rate the steady sources achieved against their target:
// the self-check's own figure (judgeParts decides the limit from it).
func (g *group) rateGate(sc SelfCheck) Gate {
	gate := Gate{Name: GateRate}
	if g.cfg.Steady == 0 || sc.TargetRate == 0 {
		gate.Verdict, gate.Figure = GateNotJudged, "no steady sources: hot sources send as fast as the target answers, and control probes wait for theirs"
		return gate
	}
	gate.Figure = fmt.Sprintf("achieved %.0f of %.0f frames/s (%.2f%%; within %.0f%% wanted)", sc.AchievedRate, sc.TargetRate, 100*sc.RateRatio, 100*(1-minRateRatio))
	gate.Verdict = GatePass
	if sc.RateRatio < minRateRatio {
		gate.Verdict = GateFail
		gate.Figure += ": the limit says whose doing"
	}
	return gate
}

// arrivalsGate tests the steady sources' sent times against their
// arrival process, at resolution res (ns): not judged when the target
// held them back (when they sent was its doing).
func (g *group) arrivalsGate(r *Result, res int64) Gate {
	gate := Gate{Name: GateArrivals, Verdict: GateNotJudged}
	sc := r.SelfCheck
	if g.cfg.Steady == 0 {
		gate.Figure = "no steady sources"
		return gate
	}
	if held := sc.BlockedS["window"] + sc.BlockedS["socket"]; held > maxBlockedShare*r.Measured.Seconds()*float64(g.cfg.Steady) {
		gate.Figure = fmt.Sprintf("the target held the steady sources back %.3f s in all: when they sent was its doing (the limit)", held)
		return gate
	}
	resText := fmt.Sprintf("resolution %v", time.Duration(res))
	var parts []string
	failed, judged := false, false
	if g.cfg.Arrivals == ArrivalsPoisson {
		exp, expSkipped, disp := g.poissonFits(res)
		if expSkipped != "" {
			parts = append(parts, "Anderson–Darling not judged: "+expSkipped)
		} else {
			judged, failed = exp.Judged(), exp.Fails()
			parts = append(parts, judgedText(exp.String(), exp.Judged()))
		}
		judged, failed = judged || disp.Judged(), failed || disp.Fails()
		parts = append(parts, judgedText(disp.String(), disp.Judged()))
		parts = append(parts, resText)
	} else {
		fit, shortest := g.periodFit(res)
		if shortest < 2*float64(res) {
			parts = append(parts, fmt.Sprintf("sources' period %v within twice the %s: not judged", time.Duration(shortest), resText))
		} else {
			judged, failed = fit.Judged(), fit.Fails()
			parts = append(parts, judgedText(fit.String(), fit.Judged()), resText)
		}
	}
	gate.Figure = g.cfg.Arrivals
	if gate.Figure == "" {
		gate.Figure = ArrivalsFixed
	}
	gate.Figure += ": " + strings.Join(parts, "; ")
	switch {
	case failed:
		gate.Verdict = GateFail
	case judged:
		gate.Verdict = GatePass
	}
	return gate
}

// judgedText marks a figure too thin to judge.
func judgedText(s string, judged bool) string {
	if judged {
		return s
	}
	return s + " (too few to judge)"
}

// poissonFits tests each loop's steady sends (one Poisson process a loop,
// its sources' superposition) at resolution res: the gaps beyond res for
// the exponential (only without a send grain and with res at most a tenth
// of the mean gap: not judged otherwise), each block's stretch of sends
// for dispersion in windows of at least 20 res and 10 mean gaps.
// expSkipped says why the exponential was not tested ("" when it was).
func (g *group) poissonFits(res int64) (exp stats.ExpFit, expSkipped string, disp stats.DispersionFit) {
	var gaps []float64
	var stretches []stats.Counted
	rNorm, grained := 0.0, false
	for _, l := range g.loops {
		grained = grained || l.grain > 0
		steady := 0
		for _, c := range l.conns {
			if c.kind == kindSteady {
				steady++
			}
		}
		if steady == 0 || g.cfg.Rate <= 0 {
			continue
		}
		meanGap := 1e9 * float64(g.cfg.Steady) / (g.cfg.Rate * float64(steady))
		rNorm = max(rNorm, float64(res)/meanGap)
		width := max(20*res, int64(10*meanGap))
		for _, b := range l.sentLog.Blocks() {
			times := make([]int64, len(b.Samples))
			for i, s := range b.Samples {
				times[i] = s.At
				if i > 0 {
					gaps = append(gaps, float64(s.At-b.Samples[i-1].At)/meanGap)
				}
			}
			// The stretch from just after its first send (a window opened at
			// a send would count it for sure) to its last: every send in it
			// is in the block.
			stretches = append(stretches, stats.Counted{Times: times[1:], Lo: times[0] + 1, Hi: times[len(times)-1], Width: width})
		}
	}
	switch {
	case grained:
		expSkipped = fmt.Sprintf("the sends go out on a %v grain, a lattice the gaps' shape follows", sendGrain)
	case rNorm > maxExpFitResolution:
		expSkipped = fmt.Sprintf("the resolution is %.2f of the mean gap (at most %.1f: the send delays shape the gaps)", rNorm, maxExpFitResolution)
	default:
		exp = stats.FitExponential(gaps, rNorm, maxExpFit)
	}
	return exp, expSkipped, stats.FitDispersion(stretches)
}

// periodFit tests each steady source's gaps between consecutive sends
// against its period, for the sources whose period is at least twice res;
// shortest is the shortest period among the steady sources (ns).
func (g *group) periodFit(res int64) (fit stats.PeriodFit, shortest float64) {
	shortest = -1
	for _, l := range g.loops {
		for _, c := range l.conns {
			if c.kind == kindSteady && (shortest < 0 || c.period < shortest) {
				shortest = c.period
			}
		}
		for _, b := range l.sentLog.Blocks() {
			last := map[int64]int64{}
			for _, s := range b.Samples {
				if prev, ok := last[s.Value]; ok {
					if p := l.conns[s.Value].period; p >= 2*float64(res) {
						fit.Add(float64(s.At-prev), p)
					}
				}
				last[s.Value] = s.At
			}
		}
	}
	return fit, max(shortest, 0)
}

// independenceGate tests consecutive latencies of an open loop's class.
func independenceGate(class string, runs [][]float64) Gate {
	ranked := stats.RankRuns(runs)
	d := ranked.Lag(1)
	gate := Gate{Name: GateIndependence, Class: class, Figure: d.String()}
	switch {
	case !d.Judged():
		gate.Verdict = GateNotJudged
		gate.Figure += " (too few to judge)"
	case d.Fails():
		gate.Verdict = GateFail
		gate.Thinning = ranked.Thinning()
		gate.CountsOneIn = ranked.IntervalThinning()
		if gate.Thinning > 0 {
			gate.Figure += fmt.Sprintf(": samples %d apart are not correlated beyond 1/3; the class's intervals count one sample in %d", gate.Thinning, gate.CountsOneIn)
		} else {
			gate.Figure += fmt.Sprintf(": samples are correlated up to %d apart; the class has no intervals", stats.MaxThinning)
		}
	default:
		gate.Verdict = GatePass
	}
	return gate
}

// stationarityGate tests a class's latencies, timed from the start of
// measuring, for a trend over span (ns).
func stationarityGate(class string, timed []stats.Sample, span int64) Gate {
	t := stats.TrendOf(timed, 0, span)
	gate := Gate{Name: GateStationarity, Class: class}
	switch {
	case !t.Judged():
		gate.Verdict = GateNotJudged
		gate.Figure = fmt.Sprintf("%s samples logged: too few for a trend", figure.Count(int64(len(timed))))
	case t.Fails():
		gate.Verdict, gate.Figure = GateFail, t.String()+": the run's percentiles describe no steady state"
	default:
		gate.Verdict, gate.Figure = GatePass, t.String()
	}
	return gate
}

// samplesGate asks h for an interval of the headline percentile.
func samplesGate(class string, h *hdrhistogram.Histogram) Gate {
	iv := stats.PercentileInterval(h, HeadlinePercentile)
	gate := Gate{Name: GateSamples, Class: class, Verdict: GatePass}
	n := figure.Count(h.TotalCount())
	if iv.TooFew {
		gate.Verdict = GateFail
		gate.Figure = fmt.Sprintf("too few samples for p%g: n = %s; needs ≥ %s", float64(HeadlinePercentile), n, figure.Count(iv.Need))
		return gate
	}
	gate.Figure = fmt.Sprintf("p%g %s from n = %s", float64(HeadlinePercentile), iv, n)
	return gate
}

// precisionClass is the class Config.Precision judges: the data class,
// or the control class without data sources.
func precisionClass(cfg Config) string {
	if cfg.Hot+cfg.Steady > 0 {
		return ClassData
	}
	return ClassControl
}

// extendForPrecision, at the end of sending, reports whether sending goes
// on: with Config.Precision, while the headline interval is wider than
// asked and the measured time may still grow. It moves the end of sending
// an Interval on (to PrecisionWithin at most), and every timetable's end
// with it.
func (l *loop) extendForPrecision() bool {
	p := l.precision
	if p == nil {
		return false
	}
	p.Judged = true
	p.MeasuredS = time.Duration(l.now - l.measureFrom).Seconds()
	p.ExtendedS = max(0, time.Duration(l.sendEnd-l.measureFrom-int64(l.cfg.Duration)).Seconds())
	p.Width, p.TooFew = 0, true
	if h, ok := l.rec.Histogram(p.Class); ok && h.TotalCount() > 0 {
		iv := stats.PercentileInterval(h, p.Percentile)
		if point := float64(h.ValueAtPercentile(p.Percentile)) / 1e3; !iv.TooFew && point > 0 {
			p.Width, p.TooFew = (iv.HiUs-iv.LoUs)/point, false
		}
	}
	if p.Met = !p.TooFew && p.Width <= p.Target; p.Met {
		return false
	}
	limit := l.measureFrom + int64(l.cfg.PrecisionWithin)
	if l.sendEnd >= limit {
		return false
	}
	l.sendEnd = min(l.sendEnd+int64(l.cfg.Interval), limit)
	for _, c := range l.conns {
		if c.kind != kindHot && c.endSeq != 0 {
			c.endSeq = c.firstFrom(l.sendEnd)
		}
		if u := c.urgent; u != nil {
			u.endTick = u.firstFrom(l.sendEnd)
		}
	}
	if l.churn != nil {
		l.churn.endBurst = l.churn.firstFrom(l.sendEnd)
	}
	return true
}

// precisionGate judges Config.Precision's outcome.
func precisionGate(p *PrecisionOutcome) Gate {
	gate := Gate{Name: GatePrecision, Class: p.Class, Verdict: GatePass}
	switch {
	case !p.Judged:
		gate.Verdict, gate.Figure = GateNotJudged, "sending ended before the duration (interrupted, or every source ended): the interval was never judged"
	case p.Met:
		gate.Figure = fmt.Sprintf("p%g's interval %.1f%% of it wide after %.1f s measured (%.1f s beyond the duration): wanted ≤ %.1f%%",
			p.Percentile, 100*p.Width, p.MeasuredS, p.ExtendedS, 100*p.Target)
	case p.TooFew:
		gate.Verdict = GateFail
		gate.Figure = fmt.Sprintf("p%g had too few samples for an interval after %.1f s measured, the most allowed", p.Percentile, p.MeasuredS)
	default:
		gate.Verdict = GateFail
		gate.Figure = fmt.Sprintf("p%g's interval still %.1f%% of it wide after %.1f s measured, the most allowed: wanted ≤ %.1f%%",
			p.Percentile, 100*p.Width, p.MeasuredS, 100*p.Target)
	}
	return gate
}
