//go:build linux

package harness

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results/stats"
)

// SideBusy is one side's busy fraction per CPU of its set over a span
// (0..1 each; Mean their mean): the kernel's account of those CPUs, which
// counts whatever ran there, the side's threads and the network work the
// kernel did on them, and anything else the machine placed there.
//
// With its own threads' times (OwnKnown), it also says whose the time
// was, in CPUs' worth over the span: Own, the side's threads on a CPU;
// Others, the user-space and stolen time of its CPUs that was not its
// threads' user time (other processes, another guest), at least 0; Wait,
// its threads' time runnable but waiting for a CPU. Kernel work (system,
// irq, softirq time: the network stack, ksoftirqd, kworkers) is nobody's
// in Others: on a pinned side's CPU it is mostly the run's own traffic.
type SideBusy struct {
	CPUs     []int     `json:"cpus"`
	Busy     []float64 `json:"busy"`
	Mean     float64   `json:"mean"`
	OwnKnown bool      `json:"own_known"`
	Own      float64   `json:"own"`
	Others   float64   `json:"others"`
	Wait     float64   `json:"wait"`
	// DelayUs is its threads' mean wait in a run queue each time they
	// were put on a CPU, µs (0 where the kernel does not count them).
	DelayUs float64 `json:"delay_us,omitempty"`
}

// A side was contended when both signals say so, each independent of
// the other: its CPUs went to others (Others, over the set's size, at
// least contendedOthers) and its own threads waited for a CPU for at
// least contendedWait of the time they wanted one (WaitShare: Wait over
// Own + Wait). Either alone is no contention: a side with more runnable
// threads than CPUs waits by its own design, and others' time is never
// zero — the tool's own parent process runs unpinned, and the kernel's
// tick accounting splits a task's time between user and system by
// sampling. The bounds sit between what a quiet machine shows and what
// one busy process (examples/burn) on the side's CPU does, measured with
// the quick suite (32 runs each): quiet, others at most 0.05 of a CPU on
// either side, wait shares 0–2% (server) and 16–27% (load generator: its
// runtime's threads share its CPU); burn on the generator's CPU, others
// 0.82–0.89 and its wait share 35–42% (its threads still ran within
// 9–11 µs of waking, against 4–6 µs quiet, and the server, starved of
// answers, did 10% less); burn on the server's, others 0.50 and its wait
// share 50%.
const (
	contendedOthers = 0.30
	contendedWait   = 0.30
)

// WaitShare is the share of the time the side's threads wanted a CPU
// that they waited for one: Wait / (Own + Wait); 0 when they wanted none.
func (b *SideBusy) WaitShare() float64 {
	if b.Own+b.Wait <= 0 {
		return 0
	}
	return b.Wait / (b.Own + b.Wait)
}

// contended reports whether the side's figures show contention, and says
// so in a line.
func (b *SideBusy) contended() (bool, string) {
	if b == nil || !b.OwnKnown {
		return false, ""
	}
	share := b.Others / float64(len(b.CPUs))
	why := fmt.Sprintf("CPU %s: %.0f%% busy, others' processes %.0f%% of it (its own threads %.2f CPU), its threads waited runnable %.0f%% of the time they wanted a CPU (%.0f µs a wakeup)",
		lab.ListPlacement(b.CPUs...), 100*b.Mean, 100*share, b.Own, 100*b.WaitShare(), b.DelayUs)
	return share >= contendedOthers && b.WaitShare() >= contendedWait, why
}

// CPUBusy is the busy fraction of each side's CPUs over the measured
// period, from the /proc/stat samples (lab.CPUTicks) taken inside it: FromS and
// ToS are the span they cover, in seconds after the period's start. A side
// is nil when unpinned (its CPUs are not its own) or when fewer than two
// samples fell inside the period; Notes say why.
type CPUBusy struct {
	FromS   float64   `json:"from_s"`
	ToS     float64   `json:"to_s"`
	Server  *SideBusy `json:"server,omitempty"`
	Loadgen *SideBusy `json:"loadgen,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
	// Contended says, side by side, whose CPUs went to other processes
	// while its threads waited for them (SideBusy.contended): the run's
	// figures are the machine's as much as the design's, and the run is
	// flagged so (its ledger and placement may still be valid).
	Contended []string `json:"contended,omitempty"`
}

// measureBusy is the busy fraction of each side's CPUs between from and
// to (the measured period), or nil when there is no period.
func (res *CellResult) measureBusy() {
	if res.Lab == nil || res.Load == nil || res.Load.MeasuredS <= 0 {
		return
	}
	from := res.Load.StartTime.Add(res.Cell.Load.WithDefaults().Warmup)
	to := from.Add(time.Duration(res.Load.MeasuredS * float64(time.Second)))
	b := &CPUBusy{}
	for _, side := range []struct {
		name string
		p    *lab.ProcResult
		dst  **SideBusy
	}{{"server", res.Lab.Server, &b.Server}, {"loadgen", res.Lab.Client, &b.Loadgen}} {
		if side.p == nil || !side.p.Placement.Pinned() {
			b.Notes = append(b.Notes, side.name+": unpinned, its CPUs are not its own")
			continue
		}
		sb, lo, hi, why := busyBetween(side.p, from, to)
		if sb == nil {
			b.Notes = append(b.Notes, side.name+": "+why)
			continue
		}
		*side.dst = sb
		b.FromS, b.ToS = lo.Sub(from).Seconds(), hi.Sub(from).Seconds()
		if c, why := sb.contended(); c {
			b.Contended = append(b.Contended, fmt.Sprintf("the %s's %s", side.name, why))
		}
	}
	res.CPUBusy = b
}

// busyBetween is p's busy fractions over the first and last of its
// samples inside [from, to], with their times; nil and why when there
// are fewer than two, or no tick passed between them.
func busyBetween(p *lab.ProcResult, from, to time.Time) (*SideBusy, time.Time, time.Time, string) {
	first, last, inside := -1, -1, 0
	for i, t := range p.CPUTicks {
		if !t.At.Before(from) && !t.At.After(to) {
			if first < 0 {
				first = i
			}
			last, inside = i, inside+1
		}
	}
	if inside < 2 {
		return nil, time.Time{}, time.Time{}, fmt.Sprintf("%d of %d /proc/stat samples inside the measured period; two are needed", inside, len(p.CPUTicks))
	}
	a, z := p.CPUTicks[first], p.CPUTicks[last]
	sb := &SideBusy{CPUs: p.Placement.List()}
	userSteal := 0.0 // CPUs' worth
	haveUser := len(a.UserSteal) == len(sb.CPUs) && len(z.UserSteal) == len(sb.CPUs)
	for i := range sb.CPUs {
		total := float64(z.Total[i] - a.Total[i])
		if total <= 0 {
			return nil, time.Time{}, time.Time{}, fmt.Sprintf("CPU %d: no clock tick between the samples", sb.CPUs[i])
		}
		f := float64(z.Busy[i]-a.Busy[i]) / total
		sb.Busy = append(sb.Busy, f)
		sb.Mean += f / float64(len(sb.CPUs))
		if haveUser {
			userSteal += float64(z.UserSteal[i]-a.UserSteal[i]) / total
		}
	}
	if span := z.At.Sub(a.At).Seconds() * 1e9; haveUser && a.Own != nil && z.Own != nil && span > 0 &&
		z.Own.RunNs >= a.Own.RunNs && z.Own.WaitNs >= a.Own.WaitNs && z.Own.UserNs >= a.Own.UserNs {
		sb.OwnKnown = true
		sb.Own = float64(z.Own.RunNs-a.Own.RunNs) / span
		sb.Wait = float64(z.Own.WaitNs-a.Own.WaitNs) / span
		sb.Others = max(0, userSteal-float64(z.Own.UserNs-a.Own.UserNs)/span)
		if z.Own.Slices > a.Own.Slices {
			sb.DelayUs = float64(z.Own.WaitNs-a.Own.WaitNs) / float64(z.Own.Slices-a.Own.Slices) / 1e3
		}
	}
	return sb, a.At, z.At, ""
}

// minThrottledShare: a capped server was held at its cap when at least
// this share of the periods it ran in ended with its quota spent. The
// count covers its whole life, start-up and drain included (a run's
// measured period is most of it), so the bound is well below 1.
const minThrottledShare = 0.5

// Limit says which side limited the cell's throughput, and why:
// "contended" when a side's CPUs went to other processes while its
// threads waited for them (SideBusy.contended: then every figure, the
// self-check's included, is the machine's); "loadgen" when the load
// generator's self-check says so (its own scheduling lag or CPU) or its
// own work filled a CPU (SideBusy.filled: one of its CPUs
// stats.BusyFull busy or more, its threads that much on a CPU; a loop
// thread fills one CPU, whatever the size of the set); else "server" when
// the server's did, or, for a server under a CPU cap
// (server_cpu), when the kernel throttled it in at least half the periods
// it ran (it spent its quota: the cap was the limit); else "neither" (the
// load's own shape, ping-pong say, set the pace; a capped server that was
// not held at its cap says so: its figures are not those of an equal CPU
// budget). Without busy figures for the server it says what the
// self-check says (loadgen.SelfCheck.Limit). "" when the load generator
// left no summary.
func (res *CellResult) Limit() (side, why string) {
	s := res.Load
	if s == nil {
		return "", ""
	}
	var srv, gen *SideBusy
	if b := res.CPUBusy; b != nil {
		srv, gen = b.Server, b.Loadgen
	}
	var capped *lab.CPULimitRecord
	if res.Lab != nil && res.Lab.Server != nil {
		capped = res.Lab.Server.CPULimit
	}
	// A contended side's figures, the self-check's included, are the
	// machine's: the limit is the contention.
	if c, why := gen.contended(); c {
		return "contended", "loadgen " + why
	}
	if c, why := srv.contended(); c {
		return "contended", "server " + why
	}
	switch {
	case s.SelfCheck.Limit == loadgen.LimitLoadgen:
		why = "its self-check"
		if len(s.SelfCheck.Reasons) > 0 {
			why += ": " + s.SelfCheck.Reasons[0]
		}
		return "loadgen", why
	case gen.filled():
		return "loadgen", gen.describe()
	case capped != nil:
		return capLimit(capped)
	case srv.filled():
		return "server", srv.describe()
	case srv == nil:
		return s.SelfCheck.Limit, "the load generator's self-check (no busy figures for the server's CPUs)"
	}
	why = "server " + srv.describe()
	if gen != nil {
		why += ", loadgen " + gen.describe()
	}
	return "neither", why
}

// capLimit is Limit's verdict on a capped server: "server" when it was
// held at its cap, "neither" when it was not.
func capLimit(c *lab.CPULimitRecord) (side, why string) {
	held := fmt.Sprintf("capped at %g CPU, throttled in %d of the %d periods it ran", c.Share, c.Throttled, c.Periods)
	if c.Periods > 0 && float64(c.Throttled) >= minThrottledShare*float64(c.Periods) {
		return "server", held
	}
	return "neither", held + ": not held at its cap, so not an equal CPU budget (something else set the pace)"
}

// filled reports whether the side's own work filled a CPU: one of its
// CPUs stats.BusyFull busy or more and, where its threads' time is
// known, its threads on a CPU that much of the span (a loop thread fills
// one CPU, whatever the size of the set). A CPU that others filled is
// not the side's limit.
func (b *SideBusy) filled() bool {
	if b == nil || b.fullest() < stats.BusyFull {
		return false
	}
	return !b.OwnKnown || b.Own >= stats.BusyFull
}

// fullest is the busy fraction of the side's busiest CPU.
func (b *SideBusy) fullest() float64 {
	m := 0.0
	for _, f := range b.Busy {
		m = max(m, f)
	}
	return m
}

// describe says how busy the side's CPUs were: "CPU 0 95% busy" for
// one, "CPU 2 97% busy (CPUs 0-3: mean 31%)" for several; with its own
// threads' time, ", its own threads 0.93 CPU".
func (b *SideBusy) describe() string {
	own := ""
	if b.OwnKnown {
		own = fmt.Sprintf(", its own threads %.2f CPU", b.Own)
	}
	if len(b.CPUs) == 1 {
		return fmt.Sprintf("CPU %d %.0f%% busy%s", b.CPUs[0], 100*b.fullest(), own)
	}
	i := 0
	for j, f := range b.Busy {
		if f > b.Busy[i] {
			i = j
		}
	}
	return fmt.Sprintf("CPU %d %.0f%% busy (CPUs %s: mean %.0f%%)%s", b.CPUs[i], 100*b.Busy[i], lab.ListPlacement(b.CPUs...), 100*b.Mean, own)
}
