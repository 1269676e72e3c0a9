package results_test

import (
	"math"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results"
)

// perFrameRun is a pinned server's run measured for 3 s at 100,000
// frames/s after its warm-up, with /proc samples of its CPUs before, in
// and after the measured period: inside it, 2 s apart, its threads ran
// 0.5 s and were put on a CPU 40,000 times; outside it they ran far more,
// which must not count. The reactor echoed 1,000,000 frames in its life
// with 250,000 epoll waits and 50,000 ring enters.
func perFrameRun() *harness.CellResult {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	res := &harness.CellResult{
		Load: &loadgen.Summary{StartTime: start, MeasuredS: 3, EchoRate: 100_000},
		Lab:  &lab.Result{Mode: lab.ModeLab, Server: &lab.ProcResult{}},
		Server: &roles.ServeOutput{Stats: reactors.Stats{Counters: reactors.Counters{
			FramesEchoed: 1_000_000, EpollWaits: 250_000, RingEnters: 50_000}}},
	}
	from := start.Add(res.Cell.Load.WithDefaults().Warmup)
	at := func(d time.Duration, runNs, slices uint64) lab.CPUTicks {
		return lab.CPUTicks{At: from.Add(d), Own: &lab.OwnTime{RunNs: runNs, Slices: slices}}
	}
	res.Lab.Server.CPUTicks = []lab.CPUTicks{
		at(-500*time.Millisecond, 0, 0), // warm-up: not counted
		at(500*time.Millisecond, 2e9, 100_000),
		at(1500*time.Millisecond, 2.2e9, 120_000),
		at(2500*time.Millisecond, 2.5e9, 140_000),
		at(3500*time.Millisecond, 9e9, 900_000), // after the period: not counted
	}
	return res
}

// TestPerFrameMetricsKnownValues: the costs per frame come from the
// samples inside the measured period alone and the reactor's own
// counters: 0.5 CPU-s over 2 s at 100,000 frames/s is 2.5 CPU-s per
// million frames, 40,000 switches over 200,000 frames 0.2 a frame, and
// 300,000 wait calls over 1,000,000 frames 0.3 a frame.
func TestPerFrameMetricsKnownValues(t *testing.T) {
	m, _ := results.ComputeMetrics(perFrameRun(), "", time.Time{})
	for name, want := range map[string]float64{
		results.MetricServerCPUPeriod:   2.5,
		results.MetricServerSwitches:    0.2,
		results.MetricWaitCallsPerFrame: 0.3,
	} {
		got, ok := m[name]
		if !ok || math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}

// TestPerFrameMetricsAbsentWhereUnknown: a cost that was not measured is
// absent, never 0: a black box's wait calls, an unpinned server's CPU and
// switches (no samples of its CPUs), a kernel without the threads' times
// or without their switch count, a single sample inside the period, and
// a run that answered no frame.
func TestPerFrameMetricsAbsentWhereUnknown(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*harness.CellResult)
		absent []string
	}{
		{"black box", func(r *harness.CellResult) { r.Server = nil },
			[]string{results.MetricWaitCallsPerFrame}},
		{"unpinned server", func(r *harness.CellResult) { r.Lab.Server.CPUTicks = nil },
			[]string{results.MetricServerCPUPeriod, results.MetricServerSwitches}},
		{"no threads' time", func(r *harness.CellResult) {
			for i := range r.Lab.Server.CPUTicks {
				r.Lab.Server.CPUTicks[i].Own = nil
			}
		}, []string{results.MetricServerCPUPeriod, results.MetricServerSwitches}},
		{"no switch count", func(r *harness.CellResult) {
			for i := range r.Lab.Server.CPUTicks {
				r.Lab.Server.CPUTicks[i].Own.Slices = 0
			}
		}, []string{results.MetricServerSwitches}},
		{"one sample in the period", func(r *harness.CellResult) {
			r.Lab.Server.CPUTicks = r.Lab.Server.CPUTicks[:2]
		}, []string{results.MetricServerCPUPeriod, results.MetricServerSwitches}},
		{"no frame", func(r *harness.CellResult) {
			r.Load.EchoRate = 0
			r.Server.Stats.Counters.FramesEchoed = 0
		}, []string{results.MetricServerCPUPeriod, results.MetricServerSwitches, results.MetricWaitCallsPerFrame}},
	} {
		res := perFrameRun()
		c.change(res)
		m, _ := results.ComputeMetrics(res, "", time.Time{})
		for _, name := range c.absent {
			if v, ok := m[name]; ok {
				t.Errorf("%s: %s = %v, want absent", c.name, name, v)
			}
		}
	}
	// The epoll designs' wait calls alone are a known count: present.
	res := perFrameRun()
	res.Server.Stats.Counters.RingEnters = 0
	m, _ := results.ComputeMetrics(res, "", time.Time{})
	if got := m[results.MetricWaitCallsPerFrame]; got != 0.25 {
		t.Errorf("epoll waits alone: wait calls/frame = %v, want 0.25", got)
	}
}
