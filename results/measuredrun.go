package results

import (
	"math"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results/record"
)

// MeasuredRun is what the catalogue's metrics are computed from: one
// cell's result and the interval log its load generator wrote. The
// metrics that need the histograms themselves (the counts above a
// latency, the spread, the light connections) read the log once, when
// the first of them asks, so a run none of them applies to never reads
// it.
type MeasuredRun struct {
	// Result is the cell's result.
	Result *harness.CellResult
	// Hlog is the path of the run's interval log.
	Hlog string
	// MeasuredFrom is the start of the load generator's measured period.
	MeasuredFrom time.Time

	read  bool
	hists map[string]*hdrhistogram.Histogram
	err   error
}

// ComputeMetrics computes every metric of the catalogue (Metrics) for one
// cell's result and its interval log at hlog, whose measured period
// starts at measuredFrom, and sets the limit flag the run has
// (MetricLoadgenLimited, MetricServerLimited, MetricNeitherLimited, from
// harness.CellResult.Limit). A metric the run could not measure is absent
// (Metric.Absent says when). The error is for an unreadable interval log;
// the other metrics are still returned.
func ComputeMetrics(res *harness.CellResult, hlog string, measuredFrom time.Time) (map[string]float64, error) {
	run := &MeasuredRun{Result: res, Hlog: hlog, MeasuredFrom: measuredFrom}
	m := map[string]float64{}
	for _, metric := range Metrics {
		if v, ok := metric.Compute(run); ok {
			m[metric.Name] = v
		}
	}
	side, _ := res.Limit()
	for _, f := range limitFlags {
		if f.side == side {
			m[f.metric] = 1
		}
	}
	return m, run.err
}

// measured is the interval log's measured histograms per class, read on
// the first call; the error is for an unreadable log, with the classes
// read before it.
func (r *MeasuredRun) measured() (map[string]*hdrhistogram.Histogram, error) {
	if !r.read {
		r.hists, r.err = record.MeasuredHistograms(r.Hlog, r.MeasuredFrom)
		r.read = true
	}
	return r.hists, r.err
}

// computeFunc is a Metric's Compute.
type computeFunc = func(*MeasuredRun) (float64, bool)

// fromLoad computes a metric from the load generator's summary; absent
// without one.
func fromLoad(f func(s *loadgen.Summary) (float64, bool)) computeFunc {
	return func(r *MeasuredRun) (float64, bool) {
		if r.Result.Load == nil {
			return 0, false
		}
		return f(r.Result.Load)
	}
}

// latency picks a figure of the load generator's summary of class;
// absent when the class has no samples.
func latency(class string, pick func(record.ClassSummary) float64) computeFunc {
	return fromLoad(func(s *loadgen.Summary) (float64, bool) {
		cs, ok := s.Latency.Classes[class]
		if !ok || cs.Count == 0 {
			return 0, false
		}
		return pick(cs), true
	})
}

// sourceShares are the frames each hot or steady source had answered.
func sourceShares(s *loadgen.Summary) []float64 {
	var shares []float64
	for _, c := range s.Conns {
		if c.Kind == "hot" || c.Kind == "steady" {
			shares = append(shares, float64(c.Echoed))
		}
	}
	return shares
}

// slowestSource is the slowest hot or steady source's answered frames per
// second of the run.
func slowestSource(s *loadgen.Summary) (float64, bool) {
	shares := sourceShares(s)
	if len(shares) == 0 || !(s.SelfCheck.RunS > 0) {
		return 0, false
	}
	return slices.Min(shares) / s.SelfCheck.RunS, true
}

// fairness is Jain's index over the hot and steady sources' answered
// frames.
func fairness(s *loadgen.Summary) (float64, bool) {
	shares := sourceShares(s)
	if len(shares) == 0 || !(s.SelfCheck.RunS > 0) {
		return 0, false
	}
	return jain(shares)
}

// controlOver10ms counts the control answers above 10 ms in the interval
// log's measured period.
func controlOver10ms(r *MeasuredRun) (float64, bool) {
	s := r.Result.Load
	if s == nil {
		return 0, false
	}
	if cs, ok := s.Latency.Classes[loadgen.ClassControl]; !ok || cs.Count == 0 {
		return 0, false
	}
	hs, err := r.measured()
	h := hs[loadgen.ClassControl]
	if err != nil || h == nil {
		return 0, false
	}
	return float64(countAbove(h, int64(10*time.Millisecond))), true
}

// healthCheck picks a count of the health check's; absent without
// control probes.
func healthCheck(pick func(*loadgen.HealthCheck) uint64) computeFunc {
	return fromLoad(func(s *loadgen.Summary) (float64, bool) {
		if s.HealthCheck == nil {
			return 0, false
		}
		return float64(pick(s.HealthCheck)), true
	})
}

// urgent computes a figure of the urgent class from its outcome and its
// latencies' summary; absent without urgent bytes.
func urgent(f func(u *loadgen.UrgentOutcome, cs record.ClassSummary) float64) computeFunc {
	return fromLoad(func(s *loadgen.Summary) (float64, bool) {
		if s.Urgent == nil {
			return 0, false
		}
		return f(s.Urgent, s.Latency.Classes[loadgen.ClassUrgent]), true
	})
}

// urgentLatency picks a figure of the urgent latencies; absent without
// urgent bytes or without an answer measured.
func urgentLatency(pick func(record.ClassSummary) float64) computeFunc {
	return fromLoad(func(s *loadgen.Summary) (float64, bool) {
		cs := s.Latency.Classes[loadgen.ClassUrgent]
		if s.Urgent == nil || cs.Count == 0 {
			return 0, false
		}
		return pick(cs), true
	})
}

// stopLatency is the STOP probe's latency, when it was acknowledged.
func stopLatency(s *loadgen.Summary) (float64, bool) {
	if s.Stop == nil || !(s.Stop.LatencyUs > 0) {
		return 0, false
	}
	return s.Stop.LatencyUs, true
}

// anomalies are the frames the integrity ledger did not account for,
// data and control.
func anomalies(s *loadgen.Summary) (float64, bool) {
	t, c := s.Totals, s.ControlTotals
	return float64(t.Lost + t.Duplicated + t.CorruptedAnswers + t.Unexpected + t.WrongConn +
		c.Lost + c.Duplicated + c.CorruptedAnswers + c.Unexpected + c.WrongConn), true
}

// churn picks a count of the churn outcome's; absent without churn.
func churn(pick func(*loadgen.ChurnOutcome) uint64) computeFunc {
	return fromLoad(func(s *loadgen.Summary) (float64, bool) {
		if s.Churn == nil {
			return 0, false
		}
		return float64(pick(s.Churn)), true
	})
}

// churnLatency picks a figure of the churn latencies; absent without
// churn or without a churn connection measured.
func churnLatency(pick func(record.ClassSummary) float64) computeFunc {
	return fromLoad(func(s *loadgen.Summary) (float64, bool) {
		cs := s.Latency.Classes[loadgen.ClassChurn]
		if s.Churn == nil || cs.Count == 0 {
			return 0, false
		}
		return pick(cs), true
	})
}

// server is the lab's record of the server process, nil without one.
func server(res *harness.CellResult) *lab.ProcResult {
	if res.Lab == nil {
		return nil
	}
	return res.Lab.Server
}

// serverLife is the lab's wall time of the server process, in seconds (0
// without a record).
func serverLife(res *harness.CellResult) float64 {
	if srv := server(res); srv != nil {
		return srv.Elapsed.Seconds()
	}
	return 0
}

// serverRSS is the server's peak resident set, MiB.
func serverRSS(r *MeasuredRun) (float64, bool) {
	srv := server(r.Result)
	if srv == nil || srv.MaxRSS <= 0 {
		return 0, false
	}
	return float64(srv.MaxRSS) / (1 << 20), true
}

// serverCPU is the server's CPU seconds per million frames it echoed: its
// own count for a reference reactor, the load generator's for a black box
// (the only client, so the same frames).
func serverCPU(r *MeasuredRun) (float64, bool) {
	res := r.Result
	srv := server(res)
	var frames uint64
	if res.Load != nil {
		frames = res.Load.Totals.Echoed
	}
	if res.Server != nil {
		frames = res.Server.Stats.Counters.FramesEchoed
	}
	if srv == nil || frames == 0 {
		return 0, false
	}
	return float64(srv.UserNs+srv.SysNs) / 1e9 / (float64(frames) / 1e6), true
}

// fromReactor computes a metric from a reference reactor's own
// statistics over the server's life in seconds (0: unknown); absent for a
// black box.
func fromReactor(f func(st reactors.Stats, life float64) (float64, bool)) computeFunc {
	return func(r *MeasuredRun) (float64, bool) {
		if r.Result.Server == nil {
			return 0, false
		}
		return f(r.Result.Server.Stats, serverLife(r.Result))
	}
}

// reactorHist picks a figure of the reference reactor's histogram name;
// absent when it recorded nothing.
func reactorHist(name string, pick func(reactors.HistSummary) float64) computeFunc {
	return fromReactor(func(st reactors.Stats, _ float64) (float64, bool) {
		h, ok := st.Histograms[name]
		if !ok || h.Count == 0 {
			return 0, false
		}
		return pick(h), true
	})
}

// perSecond is n per second of a life of life seconds; absent when the
// life is unknown.
func perSecond(n uint64, life float64) (float64, bool) {
	if !(life > 0) {
		return 0, false
	}
	return float64(n) / life, true
}

// multiLoop says whether the run's server is a reference reactor with
// several data loops (its per-loop statistics and their imbalance).
func multiLoop(res *harness.CellResult) bool {
	return res.Server != nil && res.Server.Imbalance != nil
}

// fromLoops computes a metric from the per-loop statistics of a reference
// reactor with several data loops; absent for any other server, where
// they say nothing.
func fromLoops(f func(st reactors.Stats, life float64) (float64, bool)) computeFunc {
	return func(r *MeasuredRun) (float64, bool) {
		if !multiLoop(r.Result) {
			return 0, false
		}
		return f(r.Result.Server.Stats, serverLife(r.Result))
	}
}

// loopsHist is the 99th percentile of the multi-loop reactor's histogram
// name, µs; absent when it recorded nothing.
func loopsHist(name string) computeFunc {
	return fromLoops(func(st reactors.Stats, _ float64) (float64, bool) {
		h, ok := st.Histograms[name]
		if !ok || h.Count == 0 {
			return 0, false
		}
		return float64(h.P99) / 1e3, true
	})
}

// loopWakeups are the loop threads' voluntary context switches, all
// loops.
func loopWakeups(st reactors.Stats) uint64 {
	var wakeups uint64
	for _, l := range st.PerLoop {
		wakeups += l.Wakeups
	}
	return wakeups
}

// perAccept is n per connection accepted; absent without one.
func perAccept(n, accepts uint64) (float64, bool) {
	if accepts == 0 {
		return 0, false
	}
	return float64(n) / float64(accepts), true
}

// connsPerLoop are the fewest and the most connections a data loop got
// (+Inf and −Inf without a data loop).
func connsPerLoop(st reactors.Stats) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, l := range st.PerLoop {
		if l.DataLoop() {
			lo, hi = min(lo, float64(l.Conns)), max(hi, float64(l.Conns))
		}
	}
	return lo, hi
}

// acceptQueuePeak is the data port's accept queue peak in the measured
// period, summed over its listeners (harness.CellResult.AcceptQueuePeak).
func acceptQueuePeak(r *MeasuredRun) (float64, bool) {
	p, ok := r.Result.AcceptQueuePeak()
	return float64(p.Sum), ok
}

// loopsMeasured are the interval log's measured histograms of a run whose
// server has several data loops and whose data class has samples; false
// for any other run, or when the log cannot be read.
func loopsMeasured(r *MeasuredRun) (map[string]*hdrhistogram.Histogram, bool) {
	s := r.Result.Load
	if s == nil || !multiLoop(r.Result) || s.Latency.Classes[loadgen.ClassData].Count == 0 {
		return nil, false
	}
	hs, err := r.measured()
	return hs, err == nil
}

// dataSpread is the data latency's 99th percentile less its median, µs.
func dataSpread(r *MeasuredRun) (float64, bool) {
	hs, ok := loopsMeasured(r)
	h := hs[loadgen.ClassData]
	if !ok || h == nil || h.TotalCount() == 0 {
		return 0, false
	}
	return float64(h.ValueAtQuantile(99)-h.ValueAtQuantile(50)) / 1e3, true
}

// dataStddev is the data latency's standard deviation, µs.
func dataStddev(r *MeasuredRun) (float64, bool) {
	hs, ok := loopsMeasured(r)
	h := hs[loadgen.ClassData]
	if !ok || h == nil || h.TotalCount() == 0 {
		return 0, false
	}
	return h.StdDev() / 1e3, true
}

// lightLatency is the light (steady) connections' latency at percentile
// q, µs: their class when the run has one with samples, else their
// merged service intervals.
func lightLatency(q float64) computeFunc {
	return func(r *MeasuredRun) (float64, bool) {
		hs, ok := loopsMeasured(r)
		if !ok {
			return 0, false
		}
		light := hs[loadgen.ClassSteady]
		if light == nil || light.TotalCount() == 0 {
			light = steadyService(hs)
		}
		if light == nil {
			return 0, false
		}
		return float64(light.ValueAtQuantile(q)) / 1e3, true
	}
}

// steadyService merges the service-interval classes of the steady
// sources ("service/steady-0", ...) of hs; nil when there are none or
// they are empty.
func steadyService(hs map[string]*hdrhistogram.Histogram) *hdrhistogram.Histogram {
	var out *hdrhistogram.Histogram
	for name, h := range hs {
		if !strings.HasPrefix(name, loadgen.ClassServicePrefix+"steady-") || h.TotalCount() == 0 {
			continue
		}
		if out == nil {
			out = hdrhistogram.New(h.LowestTrackableValue(), h.HighestTrackableValue(), int(h.SignificantFigures()))
		}
		out.Merge(h)
	}
	return out
}

// jain is Jain's fairness index (Σx)² / (n Σx²): 1 when every share is
// equal, 1/n when one takes everything.
func jain(xs []float64) (float64, bool) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0, false
	}
	return sum * sum / (float64(len(xs)) * sq), true
}

// countAbove counts the values of h above limit (at the histogram's
// resolution: values in the bucket that holds limit count as not above).
func countAbove(h *hdrhistogram.Histogram, limit int64) int64 {
	var n int64
	for _, b := range h.Distribution() {
		if b.From > limit {
			n += b.Count
		}
	}
	return n
}
