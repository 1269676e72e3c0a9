//go:build linux

package harness

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

// WriteSummary prints the cell's result for a person, wrk2-style: the
// setting, the latency distribution of data and control, beside it the
// server's loop threads' time (writeLoopTimes), throughput, CPU
// and memory per side, the ledger and the verdict. spectrum adds the
// detailed percentile spectrum of each latency class (read back from the
// cell's loadgen.hlog).
func (r *CellResult) WriteSummary(w io.Writer, spectrum bool) error {
	var b strings.Builder
	load := r.Cell.Load.WithDefaults()
	r.writeSetting(&b, load)
	hists, cols := r.latencyColumns(&b, load)
	writeLatencyTable(&b, hists, cols, load.Steady > 0)
	b.WriteString("\n")
	r.writeLoopTimes(&b)
	if s := r.Load; s != nil {
		r.writeFigures(&b, s)
	}
	r.writeVerdict(&b)
	if spectrum {
		for _, name := range cols {
			b.WriteString("\n")
			var sb strings.Builder
			if err := record.WriteSpectrum(&sb, "Latency: "+name, hists[name]); err != nil {
				return err
			}
			b.WriteString(sb.String())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSetting prints what ran: the server, the load (with its defaults,
// load), and where each side ran.
func (r *CellResult) writeSetting(b *strings.Builder, load loadgen.Config) {
	c := r.Cell
	what := c.Target.Command() + " (black box)"
	if d := c.Target.Design(); d != "" {
		what = d + " (reference reactor)"
		if len(c.ServeArgs) > 0 {
			what += " " + strings.Join(c.ServeArgs, " ")
		}
	}
	fmt.Fprintf(b, "reactorlab run: %s\n", what)
	measured := load.Duration.String()
	if s := r.Load; s != nil && s.Precision != nil && s.Precision.ExtendedS > 0 {
		measured = fmt.Sprintf("%v (%v asked, extended for --precision %g%%)", time.Duration(s.MeasuredS*float64(time.Second)).Round(time.Millisecond), load.Duration, 100*load.Precision)
	}
	fmt.Fprintf(b, "  %s measured after %v warm-up; %s\n", measured, load.Warmup, describeLoad(load))
	if labRes := r.Lab; labRes != nil {
		where := "lab: server " + labRes.Addr + ", load generator in its own namespace over veth"
		if labRes.Mode != lab.ModeLab {
			where = "loopback: server " + labRes.Addr
			if labRes.Fallback != "" {
				where += " (no lab: " + labRes.Fallback + ")"
			}
		}
		if labRes.UserNS {
			where += ", rootless (user namespace)"
		}
		fmt.Fprintf(b, "  %s\n", where)
		var srv, gen *SidePlaced
		if p := r.Placed; p != nil {
			srv, gen = p.Server, p.Loadgen
		}
		fmt.Fprintf(b, "  %s\n  %s\n", describeSide("server", labRes.Server, srv), describeSide("loadgen", labRes.Client, gen))
	}
}

// latencyColumns reads the measured period's histograms back from the
// cell's loadgen.hlog (printing why, when it cannot) and returns them with
// the classes worth a column: those with values, data-uncorrected only
// with a steady source.
func (r *CellResult) latencyColumns(b *strings.Builder, load loadgen.Config) (map[string]*hdrhistogram.Histogram, []string) {
	var hists map[string]*hdrhistogram.Histogram
	if r.Load != nil {
		var err error
		hists, err = record.MeasuredHistograms(filepath.Join(r.Cell.Dir, loadgen.HlogFile), r.Load.StartTime.Add(load.Warmup))
		if err != nil {
			fmt.Fprintf(b, "  (latency: %v)\n", err)
		}
	}
	var cols []string
	for _, name := range []string{loadgen.ClassData, loadgen.ClassDataUncorrected, loadgen.ClassSteady, loadgen.ClassControl, loadgen.ClassUrgent, loadgen.ClassChurn, loadgen.ClassStop} {
		// Without a steady source both data classes are measured from the
		// write: the second column would repeat the first.
		if name == loadgen.ClassDataUncorrected && load.Steady == 0 {
			continue
		}
		if h := hists[name]; h != nil && h.TotalCount() > 0 {
			cols = append(cols, name)
		}
	}
	return hists, cols
}

// writeLatencyTable prints the percentiles of each column's histogram,
// and, with a steady source, what the two data columns measure from.
func writeLatencyTable(b *strings.Builder, hists map[string]*hdrhistogram.Histogram, cols []string, steady bool) {
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(b, "\n  Latency distribution (HdrHistogram, measured period; in brackets, the %.0f%% confidence interval)\n  %9s", 100*stats.Confidence, "")
	for _, name := range cols {
		fmt.Fprintf(b, " %28s", name)
	}
	b.WriteString("\n")
	for _, p := range []float64{50, 75, 90, 99, 99.9, 99.99, 99.999, 100} {
		fmt.Fprintf(b, "  %8.3f%%", p)
		for _, name := range cols {
			fmt.Fprintf(b, " %28s", percentileCell(hists[name], p))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "  %9s", "count")
	for _, name := range cols {
		fmt.Fprintf(b, " %28d", hists[name].TotalCount())
	}
	b.WriteString("\n")
	if steady {
		b.WriteString("  data is measured from each frame's intended send time (corrected for coordinated omission);\n" +
			"  data-uncorrected from its actual write. Hot sources have no schedule: both from the write.\n")
	}
}

// percentileCell is h's percentile p with its confidence interval, or,
// where h holds too few values for p, that instead of a figure; p = 100
// is the maximum, exact.
func percentileCell(h *hdrhistogram.Histogram, p float64) string {
	v := fmtDuration(time.Duration(h.ValueAtPercentile(p)))
	if p >= 100 {
		return v
	}
	iv := stats.PercentileInterval(h, p)
	if iv.TooFew {
		return iv.TooFewText()
	}
	return fmt.Sprintf("%s [%s, %s]", v, fmtDuration(time.Duration(iv.LoUs*1e3)), fmtDuration(time.Duration(iv.HiUs*1e3)))
}

// writeFigures prints the load generator's figures (summary s):
// throughput, the ledger (the churn connections' included), CPU and
// memory per side, the reactor's own ledger, its loops (writeLoops), the
// STOP probe and the self-check.
func (r *CellResult) writeFigures(b *strings.Builder, s *loadgen.Summary) {
	fmt.Fprintf(b, "  %-12s %s frames/s answered intact (data, measured period)\n", "Throughput", groupDigits(uint64(s.EchoRate+0.5)))
	writeLedger(b, s)
	writeChurn(b, s.Churn)
	if r.Lab != nil {
		// Both per-frame figures divide by every frame of the run
		// (warm-up and drain included): the server's CPU over its
		// whole life (it idles before and after the load), the load
		// generator's over its run (its start-up left out).
		if p := r.Lab.Server; p != nil {
			writeCPU(b, "CPU, memory", "server", time.Duration(p.UserNs), time.Duration(p.SysNs), p.Elapsed, "its life", s.Totals.Echoed, p.MaxRSS)
		}
		if p := r.Lab.Client; p != nil {
			sc := s.SelfCheck
			user, sys := time.Duration(sc.CPUUserS*1e9), time.Duration(sc.CPUSysS*1e9)
			writeCPU(b, "", "loadgen", user, sys, time.Duration(sc.RunS*1e9), "its run", s.Totals.Echoed, p.MaxRSS)
		}
	}
	if r.Server != nil {
		l := r.Server.Ledger
		fmt.Fprintf(b, "  %-12s accepted %s, completed %s, rejected %s (reactor's final statistics, stopped by %s)\n", "Server",
			groupDigits(l.Accepted), groupDigits(l.Completed), groupDigits(l.Rejected), r.Server.StoppedBy)
	}
	r.writeLoops(b)
	if st := s.Stop; st != nil {
		fmt.Fprintf(b, "  %-12s %s", "STOP probe", st.Status)
		if st.LatencyUs > 0 {
			fmt.Fprintf(b, " after %s", fmtDuration(time.Duration(st.LatencyUs*1e3)))
		}
		if st.Ledger != nil {
			fmt.Fprintf(b, "; ledger accepted %d, completed %d, rejected %d, balanced %v", st.Ledger.Accepted, st.Ledger.Completed, st.Ledger.Rejected, st.Balanced)
		}
		b.WriteString("\n")
	}
	writeSelfCheck(b, s.SelfCheck)
	r.writeBusy(b)
}

// writeBusy prints each pinned side's busy fraction per CPU over the
// measured period, and which side was the limit.
func (r *CellResult) writeBusy(b *strings.Builder) {
	if cb := r.CPUBusy; cb != nil {
		var parts []string
		for _, side := range []struct {
			name string
			sb   *SideBusy
		}{{"server", cb.Server}, {"loadgen", cb.Loadgen}} {
			if side.sb == nil {
				continue
			}
			var cpus []string
			for i, c := range side.sb.CPUs {
				cpus = append(cpus, fmt.Sprintf("cpu%d %.0f%%", c, 100*side.sb.Busy[i]))
			}
			if side.sb.OwnKnown {
				cpus = append(cpus, fmt.Sprintf("(its threads %.2f CPU, others %.2f; they waited runnable %.0f%% of the time they wanted a CPU, %.0f µs a wakeup)",
					side.sb.Own, side.sb.Others, 100*side.sb.WaitShare(), side.sb.DelayUs))
			}
			parts = append(parts, side.name+" "+strings.Join(cpus, " "))
		}
		if len(parts) > 0 {
			fmt.Fprintf(b, "  %-12s %s (/proc/stat, %.1f s to %.1f s of the measured period)\n", "CPU busy", strings.Join(parts, "; "), cb.FromS, cb.ToS)
		}
		for _, n := range cb.Notes {
			fmt.Fprintf(b, "  %-12s   %s\n", "", n)
		}
		for _, why := range cb.Contended {
			fmt.Fprintf(b, "  %-12s %s: other processes took its CPUs while its threads waited for them, so these figures are the machine's as much as the design's: do not compare them\n",
				"CONTENDED", why)
		}
	}
	if side, why := r.Limit(); side != "" {
		fmt.Fprintf(b, "  %-12s %s (%s)\n", "Limit", side, why)
	}
}

// writeLedger prints the frame ledger of data and of control, the
// health check's verdicts on the control probes, and what became of the
// urgent bytes.
func writeLedger(b *strings.Builder, s *loadgen.Summary) {
	t := s.Totals
	fmt.Fprintf(b, "  %-12s data: sent %s = echoed %s + rejected %s + lost %s + corrupted %s + abandoned by fault %s + unanswered %s;\n"+
		"  %-12s       duplicated %s, unexpected %s, wrong connection %s\n",
		"Ledger", groupDigits(t.Sent), groupDigits(t.Echoed), groupDigits(t.Rejected), groupDigits(t.Lost), groupDigits(t.CorruptedAnswers),
		groupDigits(t.Abandoned), groupDigits(t.Unanswered), "", groupDigits(t.Duplicated), groupDigits(t.Unexpected), groupDigits(t.WrongConn))
	if !t.Balanced() {
		fmt.Fprintf(b, "  %-12s       (the sum does not balance: a bug of the load generator's)\n", "")
	}
	if ct := s.ControlTotals; ct.Sent > 0 {
		fmt.Fprintf(b, "  %-12s control: sent %s, echoed %s, lost %s\n", "", groupDigits(ct.Sent), groupDigits(ct.Echoed), groupDigits(ct.Lost))
	}
	if hc := s.HealthCheck; hc != nil {
		c := s.Config.WithDefaults()
		fmt.Fprintf(b, "  %-12s health check: false timeouts %s (answered after %v), false removals %s (%d in a row)\n", "",
			groupDigits(hc.FalseTimeouts), c.ControlTimeout, groupDigits(hc.FalseRemovals), c.RemovalAfter)
	}
	if u := s.Urgent; u != nil {
		fmt.Fprintf(b, "  %-12s urgent: sent %s = answered %s + wrong byte %s + unanswered %s (unsolicited %s);\n"+
			"  %-12s         ticks skipped %s (the previous byte unanswered: sent late, from their own intended times), never sent %s\n", "",
			groupDigits(u.Sent), groupDigits(u.Answered), groupDigits(u.Mismatched), groupDigits(u.Unanswered), groupDigits(u.Unsolicited),
			"", groupDigits(u.Skipped), groupDigits(u.NotSent))
	}
}

// writeSelfCheck prints what limited the load generator, the engine its
// loops ran (with the uring engine's ring counters), and its steady rate
// against the target's.
func writeSelfCheck(b *strings.Builder, sc loadgen.SelfCheck) {
	fmt.Fprintf(b, "  %-12s limit: %s", "Self-check", sc.Limit)
	if sc.Engine != "" {
		fmt.Fprintf(b, "; engine %s", sc.Engine)
	}
	if u := sc.Uring; u != nil {
		fmt.Fprintf(b, " (%s io_uring_enter calls for %s SQEs, %s CQ overflows flushed, %s recvs re-armed for want of buffers)",
			groupDigits(u.Enters), groupDigits(u.Submitted), groupDigits(u.OverflowFlushes), groupDigits(u.NoBuffers))
	}
	if sc.TargetRate > 0 {
		fmt.Fprintf(b, "; steady rate %.0f of %.0f frames/s (%.2f%%), send lag p99 %s", sc.AchievedRate, sc.TargetRate, 100*sc.RateRatio,
			fmtDuration(time.Duration(sc.SendLagP99Us*1e3)))
	}
	b.WriteString("\n")
	for _, why := range sc.Reasons {
		fmt.Fprintf(b, "  %-12s   %s\n", "", why)
	}
	writeGates(b, sc.Gates)
}

// writeGates prints the self-check's gates, a line each, and a FLAGGED
// line for each that failed: its figures stand, but mean less than they
// say.
func writeGates(b *strings.Builder, gates []loadgen.Gate) {
	for i, g := range gates {
		label := ""
		if i == 0 {
			label = "Gates"
		}
		fmt.Fprintf(b, "  %-12s %s\n", label, g)
	}
	for _, g := range gates {
		if g.Verdict == loadgen.GateFail {
			fmt.Fprintf(b, "  %-12s %s gate failed: the run's figures stand as measured but do not mean what a passing run's do\n", "FLAGGED", g.Key())
		}
	}
}

// writeVerdict prints VALID, or INVALID with every reason, and where the
// files are.
func (r *CellResult) writeVerdict(b *strings.Builder) {
	if r.Valid {
		fmt.Fprintf(b, "  %-12s VALID\n", "Verdict")
	} else {
		fmt.Fprintf(b, "  %-12s INVALID\n", "Verdict")
		for _, why := range r.Invalid {
			fmt.Fprintf(b, "  %-12s   - %s\n", "", why)
		}
	}
	fmt.Fprintf(b, "  %-12s %s\n", "Files", r.Cell.Dir)
}

// describeLoad says what the load generator did, in a line.
func describeLoad(c loadgen.Config) string {
	var parts []string
	if c.Hot > 0 {
		hot := fmt.Sprintf("%s × %d in flight", figure.Counted(c.Hot, "hot source", "hot sources"), c.InFlight)
		if c.HotLead > 0 {
			hot += fmt.Sprintf(" (connected %v before the others)", c.HotLead)
		}
		parts = append(parts, hot)
	}
	if c.Steady > 0 {
		arrivals := ""
		if c.Arrivals == loadgen.ArrivalsPoisson {
			arrivals = fmt.Sprintf(", Poisson arrivals (seed %d)", c.ArrivalSeed)
		}
		parts = append(parts, fmt.Sprintf("%s at %g frames/s in all%s (window %d)", figure.Counted(c.Steady, "steady source", "steady sources"), c.Rate, arrivals, c.Window))
	}
	if c.ControlEvery > 0 {
		parts = append(parts, fmt.Sprintf("PING every %v on %s", c.ControlEvery, figure.Counted(c.Control, "control connection", "control connections")))
	}
	if c.ChurnRate > 0 {
		parts = append(parts, fmt.Sprintf("churn %g connections/s in bursts of %d (at most %d open), each one frame then RST", c.ChurnRate, c.ChurnBurst, c.ChurnMax))
	}
	if c.StopAt > 0 {
		parts = append(parts, fmt.Sprintf("STOP at %v", c.StopAt))
	}
	if c.UrgentEvery > 0 {
		parts = append(parts, fmt.Sprintf("an urgent byte every %v on the data connections in turn", c.UrgentEvery))
	}
	parts = append(parts, fmt.Sprintf("%d-byte frames", c.Payload+32))
	if len(c.Faults) > 0 {
		parts = append(parts, "wire faults "+strings.Join(c.Faults, " "))
	}
	return strings.Join(parts, ", ")
}

// describeSide says where one side ran (p, its process's record; placed,
// its loops as verified, nil if unknown): its CPU set, its loops and
// their CPUs, whether every thread stayed where it was put, and the
// server's CPU cap.
func describeSide(name string, p *lab.ProcResult, placed *SidePlaced) string {
	if p == nil {
		return name + ": no record"
	}
	s := name + " unpinned"
	if p.Placement.Pinned() {
		s = name + " on " + describeSet(p.Placement)
	}
	if placed != nil {
		if loops := describeLoops(placed); loops != "" {
			s += ", " + loops
		}
	}
	if p.Placement.Pinned() {
		switch {
		case !p.AffinityOK:
			s += " (a thread was seen off it)"
		case placed != nil && !placed.Verified:
			s += " (a loop thread was not where it was put: see the verdict)"
		default:
			s += " (every thread verified)"
		}
	}
	if l := p.CPULimit; l != nil {
		s += fmt.Sprintf(", capped at %g CPU (throttled in %d of %d periods of %g ms)", l.Share, l.Throttled, l.Periods, l.PeriodMs)
	}
	return s
}

// describeLoops says how many loops a side ran and on which CPUs: "2
// loops (both on CPU 1: more loops than CPUs)", "2 loops (data loop on
// CPU 0, control loop on CPU 1)", "4 loops (loops 0 and 2 on CPU 2, loops
// 1 and 3 on CPU 3)"; "" for a side that reported none.
func describeLoops(side *SidePlaced) string {
	n := len(side.Loops)
	if n == 0 {
		return ""
	}
	count := figure.Counted(n, "loop", "loops")
	var cpus []int           // in the order first seen
	byCPU := map[int][]int{} // CPU → indexes into side.Loops
	for i, l := range side.Loops {
		if _, seen := byCPU[l.CPU]; !seen {
			cpus = append(cpus, l.CPU)
		}
		byCPU[l.CPU] = append(byCPU[l.CPU], i)
	}
	if n == 1 || slices.Equal(cpus, []int{-1}) {
		return count
	}
	crowded := ""
	if side.Placement.Len() > 0 && n > side.Placement.Len() {
		crowded = ": more loops than CPUs"
	}
	if len(cpus) == 1 {
		who := "both"
		if n > 2 {
			who = fmt.Sprintf("all %d", n)
		}
		if names := loopNames(side.Loops, byCPU[cpus[0]]); side.Loops[0].Role != "" {
			who = names + " " + who
		}
		return fmt.Sprintf("%s (%s on %s%s)", count, who, cpuText(cpus[0]), crowded)
	}
	var groups []string
	for _, c := range cpus {
		groups = append(groups, loopNames(side.Loops, byCPU[c])+" on "+cpuText(c))
	}
	return fmt.Sprintf("%s (%s%s)", count, strings.Join(groups, ", "), strings.Replace(crowded, ":", ";", 1))
}

// loopNames names the loops at idx: by role for a reference design's
// ("data loop and control loop"), else by index ("loop 0", "loops 0 and
// 2").
func loopNames(loops []LoopPlaced, idx []int) string {
	var names []string
	if loops[idx[0]].Role != "" {
		for _, i := range idx {
			switch r := loops[i].Role; r {
			case "worker", "loop":
				names = append(names, fmt.Sprintf("%s %d", r, loops[i].Loop))
			default:
				names = append(names, r+" loop")
			}
		}
		return andList(names)
	}
	for _, i := range idx {
		names = append(names, strconv.Itoa(loops[i].Loop))
	}
	if len(names) == 1 {
		return "loop " + names[0]
	}
	return "loops " + andList(names)
}

// andList is "a", "a and b", "a, b and c".
func andList(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// cpuText is "CPU 3", or "no CPU of its own" for an unpinned loop.
func cpuText(cpu int) string {
	if cpu < 0 {
		return "no CPU of its own"
	}
	return "CPU " + strconv.Itoa(cpu)
}

// describeSet is "CPU 3" or "CPUs 0-3".
func describeSet(s lab.SidePlacement) string {
	if s.Len() == 1 {
		return "CPU " + s.String()
	}
	return "CPUs " + s.String()
}

// writeCPU prints one side's CPU time over a period, its share of a CPU
// (when the period's length over is known, > 0) and its cost per echoed
// frame.
func writeCPU(b *strings.Builder, label, name string, user, sys, over time.Duration, period string, frames uint64, maxRSS int64) {
	share := 0.0
	if over > 0 {
		share = (user + sys).Seconds() / over.Seconds()
	}
	perFrame := "-"
	if frames > 0 {
		perFrame = fmtDuration((user + sys) / time.Duration(frames))
	}
	shareText := ""
	if over > 0 {
		shareText = fmt.Sprintf("%.2f CPU ", share)
		period += fmt.Sprintf(", %.1f s", over.Seconds())
	}
	fmt.Fprintf(b, "  %-12s %-7s %s(user %.2f s + sys %.2f s over %s), %s per echoed frame, peak RSS %.1f MiB\n",
		label, name, shareText, user.Seconds(), sys.Seconds(), period, perFrame, float64(maxRSS)/(1<<20))
}

// fmtDuration prints d with three significant digits in a unit a person
// reads at a glance.
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3gs", d.Seconds())
}

// groupDigits prints n with thousands separated by commas.
func groupDigits(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
