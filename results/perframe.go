package results

import (
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/reactors"
)

// serverOwnSpan is the server's own threads' time (lab.OwnTime) at the
// first and the last of the lab's /proc samples of its CPUs that fall
// inside the load generator's measured period, and the seconds between
// them; ok is false without a lab record of the server, a measured
// period, two such samples carrying the threads' time, or a span between
// them. The samples exist only for a pinned server (lab.CPUTicks).
func serverOwnSpan(r *MeasuredRun) (a, z lab.OwnTime, span float64, ok bool) {
	res := r.Result
	if res.Lab == nil || res.Lab.Server == nil || res.Load == nil || !(res.Load.MeasuredS > 0) {
		return a, z, 0, false
	}
	from := res.Load.StartTime.Add(res.Cell.Load.WithDefaults().Warmup)
	to := from.Add(time.Duration(res.Load.MeasuredS * float64(time.Second)))
	first, last := -1, -1
	for i, t := range res.Lab.Server.CPUTicks {
		if t.At.Before(from) || t.At.After(to) || t.Own == nil {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if first < 0 || last == first {
		return a, z, 0, false
	}
	p, q := res.Lab.Server.CPUTicks[first], res.Lab.Server.CPUTicks[last]
	span = q.At.Sub(p.At).Seconds()
	if !(span > 0) || q.Own.RunNs < p.Own.RunNs || q.Own.Slices < p.Own.Slices {
		return a, z, 0, false
	}
	return *p.Own, *q.Own, span, true
}

// framesIn is the data frames answered in span seconds of the measured
// period at the period's rate (loadgen.Summary.EchoRate); 0 without a
// frame answered.
func framesIn(r *MeasuredRun, span float64) float64 {
	if r.Result.Load == nil || !(r.Result.Load.EchoRate > 0) {
		return 0
	}
	return r.Result.Load.EchoRate * span
}

// serverCPUPeriod is the server's threads' time on a CPU (schedstat)
// over the measured period, CPU seconds per million frames answered in
// the same span.
func serverCPUPeriod(r *MeasuredRun) (float64, bool) {
	a, z, span, ok := serverOwnSpan(r)
	frames := framesIn(r, span)
	if !ok || frames == 0 {
		return 0, false
	}
	return float64(z.RunNs-a.RunNs) / 1e9 / (frames / 1e6), true
}

// serverSwitchesPerFrame is the times the server's threads were put on a
// CPU (schedstat's count, one per context switch into them) over the
// measured period, per frame answered in the same span; absent where the
// kernel does not count them (0 at the span's end).
func serverSwitchesPerFrame(r *MeasuredRun) (float64, bool) {
	a, z, span, ok := serverOwnSpan(r)
	frames := framesIn(r, span)
	if !ok || frames == 0 || z.Slices == 0 {
		return 0, false
	}
	return float64(z.Slices-a.Slices) / frames, true
}

// waitCallsPerFrame is a reference reactor's calls that wait for or
// collect its work, epoll_wait and io_uring_enter (Counters.EpollWaits +
// Counters.RingEnters), per DATA frame it echoed, over its whole life;
// absent for a black box, whose calls are not known, and without a frame
// echoed.
func waitCallsPerFrame(r *MeasuredRun) (float64, bool) {
	if r.Result.Server == nil {
		return 0, false
	}
	c := r.Result.Server.Stats.Counters
	return perFrame(c.EpollWaits+c.RingEnters, c)
}

// perFrame is n per DATA frame echoed; absent without one.
func perFrame(n uint64, c reactors.Counters) (float64, bool) {
	if c.FramesEchoed == 0 {
		return 0, false
	}
	return float64(n) / float64(c.FramesEchoed), true
}
