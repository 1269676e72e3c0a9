//go:build linux

package matrix

import (
	"math"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

// multiLoopMetrics adds to m the figures the multiloop suite's tables
// need: from a reference reactor with several data loops, its accept
// wakeups and loop wakeups (per second of the server's life, life, and
// per accepted connection), connections per loop, the imbalance and
// mainsub's handoff p99; from the lab, the data port's accept queue peak
// in the measured period; from the load generator, the churn class and
// outcome; and, for a reactor with several data loops, from the interval
// log at hlog (the measured period's, from measuredFrom), the data
// latency's spread and standard deviation and the light (steady)
// connections' service times. The error is for an
// unreadable interval log; the other figures are still added.
func multiLoopMetrics(m map[string]float64, res *harness.CellResult, hlog string, measuredFrom time.Time, life float64) error {
	multi := res.Server != nil && res.Server.Imbalance != nil
	if multi {
		loopMetrics(m, res.Server.Stats, life)
	}
	if p, ok := res.AcceptQueuePeak(); ok {
		m[results.MetricAcceptQueuePeak] = float64(p.Sum)
	}
	s := res.Load
	if s == nil {
		return nil
	}
	churnMetrics(m, s)
	if !multi || s.Latency.Classes[loadgen.ClassData].Count == 0 {
		return nil
	}
	hs, err := record.MeasuredHistograms(hlog, measuredFrom)
	if err != nil {
		return err
	}
	if h := hs[loadgen.ClassData]; h != nil && h.TotalCount() > 0 {
		m[results.MetricDataSpread] = float64(h.ValueAtQuantile(99)-h.ValueAtQuantile(50)) / 1e3
		m[results.MetricDataStddev] = h.StdDev() / 1e3
	}
	if light := hs[loadgen.ClassSteady]; light != nil && light.TotalCount() > 0 {
		m[results.MetricLightP99] = float64(light.ValueAtQuantile(99)) / 1e3
		m[results.MetricLightP999] = float64(light.ValueAtQuantile(99.9)) / 1e3
	} else if light := steadyService(hs); light != nil {
		m[results.MetricLightP99] = float64(light.ValueAtQuantile(99)) / 1e3
		m[results.MetricLightP999] = float64(light.ValueAtQuantile(99.9)) / 1e3
	}
	return nil
}

// loopMetrics adds a multi-loop reactor's per-loop figures (st.PerLoop,
// st.Imbalance) over a life of life seconds (0: unknown, no rates).
func loopMetrics(m map[string]float64, st reactors.Stats, life float64) {
	c := st.Counters
	var wakeups uint64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range st.PerLoop {
		wakeups += l.Wakeups
		if l.DataLoop() {
			lo, hi = min(lo, float64(l.Conns)), max(hi, float64(l.Conns))
		}
	}
	if life > 0 {
		m[results.MetricUselessAccepts] = float64(c.UselessAcceptWakeups) / life
		m[results.MetricLoopWakeups] = float64(wakeups) / life
	}
	if c.Accepts > 0 {
		m[results.MetricUselessAcceptsPerConn] = float64(c.UselessAcceptWakeups) / float64(c.Accepts)
		m[results.MetricLoopWakeupsPerConn] = float64(wakeups) / float64(c.Accepts)
	}
	m[results.MetricConnsPerLoopMin], m[results.MetricConnsPerLoopMax] = lo, hi
	im := st.Imbalance
	m[results.MetricBusyMaxOverMean], m[results.MetricCPUMaxOverMean], m[results.MetricFramesJain] = im.BusyMaxOverMean, im.CPUMaxOverMean, im.FramesJain
	for name, metric := range map[string]string{reactors.HistHandoff: results.MetricHandoffP99, reactors.HistHandoffFirstRead: results.MetricHandoffReadP99} {
		if h, ok := st.Histograms[name]; ok && h.Count > 0 {
			m[metric] = float64(h.P99) / 1e3
		}
	}
}

// churnMetrics adds the churn class's latencies (when any was measured)
// and the outcome's refused, reset and skipped counts; nothing without
// churn.
func churnMetrics(m map[string]float64, s *loadgen.Summary) {
	o := s.Churn
	if o == nil {
		return
	}
	if cs := s.Latency.Classes[loadgen.ClassChurn]; cs.Count > 0 {
		m[results.MetricChurnP50], m[results.MetricChurnP99], m[results.MetricChurnMax] = cs.P50Us, cs.P99Us, cs.MaxUs
	}
	m[results.MetricChurnRefused], m[results.MetricChurnReset], m[results.MetricChurnSkipped] = float64(o.Refused), float64(o.Reset), float64(o.Skipped)
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

// serverLife is the lab's wall time of the server process, in seconds (0
// without a record).
func serverLife(res *harness.CellResult) float64 {
	if res.Lab == nil || res.Lab.Server == nil {
		return 0
	}
	return res.Lab.Server.Elapsed.Seconds()
}
