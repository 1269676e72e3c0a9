//go:build linux

package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results/figure"
)

// LoopRates is one server loop's figures as the summary shows them: its
// counters (reactors.LoopStats) and, per second of the server's life
// (LifeS, the lab's wall time of the server process; 0 when unknown, and
// then no rates), its wakeups, accept wakeups and useless accept wakeups.
// Busy and CPU are fractions of the loop's own life; the rates divide
// counts over the loop's life by the process's, which is a little longer
// (the start before the loop ran, the stop after it ended).
type LoopRates struct {
	reactors.LoopStats
	LifeS                  float64 `json:"life_s"`
	WakeupsPerS            float64 `json:"wakeups_per_s"`
	AcceptWakeupsPerS      float64 `json:"accept_wakeups_per_s"`
	UselessAcceptWakeupsPS float64 `json:"useless_accept_wakeups_per_s"`
}

// LoopRates is each server loop's figures with its rates (see LoopRates),
// in loop order; nil for a black box or a reactor that reported no
// per-loop figures.
func (r *CellResult) LoopRates() []LoopRates {
	if r.Server == nil || len(r.Server.PerLoop) == 0 {
		return nil
	}
	var life float64
	if r.Lab != nil && r.Lab.Server != nil {
		life = r.Lab.Server.Elapsed.Seconds()
	}
	out := make([]LoopRates, len(r.Server.PerLoop))
	for i, s := range r.Server.PerLoop {
		out[i] = LoopRates{LoopStats: s, LifeS: life}
		if life > 0 {
			out[i].WakeupsPerS = float64(s.Wakeups) / life
			out[i].AcceptWakeupsPerS = float64(s.AcceptWakeups) / life
			out[i].UselessAcceptWakeupsPS = float64(s.UselessAcceptWakeups) / life
		}
	}
	return out
}

// writeLoops prints, for a reactor with several data loops, each loop's
// figures (its role, connections, frames, busy and CPU fractions,
// wakeups, accept wakeups and useless accept wakeups a second, handoffs),
// the imbalance over the data loops, mainsub's handoff latency, and the
// accept queue's peak in the measured period.
func (r *CellResult) writeLoops(b *strings.Builder) {
	q := r.AcceptQueue()
	p, inside := r.AcceptQueuePeak()
	if r.Server == nil || r.Server.Imbalance == nil {
		writeAcceptQueue(b, q, p, inside)
		return
	}
	fmt.Fprintf(b, "  %-12s %4s %-9s %8s %11s %5s %5s %10s %10s %10s %9s\n", "Loops", "loop", "role", "conns", "frames", "busy", "CPU",
		"wakeups/s", "accepts/s", "useless/s", "handoffs")
	for _, l := range r.LoopRates() {
		handoffs := "-"
		switch {
		case l.Handoffs > 0:
			handoffs = groupDigits(l.Handoffs) + " out"
		case l.HandoffsIn > 0:
			handoffs = groupDigits(l.HandoffsIn) + " in"
		}
		fmt.Fprintf(b, "  %-12s %4d %-9s %8s %11s %4.0f%% %4.0f%% %10.0f %10.0f %10.0f %9s\n", "", l.Loop, l.Role, groupDigits(l.Conns), groupDigits(l.Frames),
			100*l.Busy, 100*l.CPU, l.WakeupsPerS, l.AcceptWakeupsPerS, l.UselessAcceptWakeupsPS, handoffs)
	}
	fmt.Fprintf(b, "  %-12s   (per second of the server's life; accepts/s counts accept turns, useless/s those that found the queue empty;\n"+
		"  %-12s   wakeups are the loop thread's voluntary context switches: a herd's losers sent back to sleep inside epoll_wait count there, not as useless)\n", "", "")
	im := r.Server.Imbalance
	fmt.Fprintf(b, "  %-12s %d data loops: busy max/mean %.2f, CPU max/mean %.2f; Jain's index of frames %.3f, of connections %.3f\n",
		"Imbalance", im.DataLoops, im.BusyMaxOverMean, im.CPUMaxOverMean, im.FramesJain, im.ConnsJain)
	c := r.Server.Counters
	label := "Handoff"
	for _, hist := range []struct{ name, what string }{
		{reactors.HistHandoff, "accept to registration on the sub-loop"},
		{reactors.HistHandoffFirstRead, "accept to the sub-loop's first read"},
	} {
		if h, ok := r.Server.Histograms[hist.name]; ok && h.Count > 0 {
			fmt.Fprintf(b, "  %-12s %s: p50 %s, p99 %s, max %s (%s connections)\n", label, hist.what,
				fmtDuration(time.Duration(h.P50)), fmtDuration(time.Duration(h.P99)), fmtDuration(time.Duration(h.Max)), groupDigits(h.Count))
			label = ""
		}
	}
	if c.Handoffs > 0 {
		fmt.Fprintf(b, "  %-12s ingress full %s times, backlog peak %s connections\n", label, groupDigits(c.HandoffFull), groupDigits(c.HandoffBacklogMax))
	}
	writeAcceptQueue(b, q, p, inside)
}

// writeAcceptQueue prints the data port's accept queue peak over the
// measured period (p, when inside: CellResult.AcceptQueuePeak), or why
// there is none; nothing when the lab took no record (q nil).
func writeAcceptQueue(b *strings.Builder, q *lab.AcceptQueue, p lab.AcceptQueuePeak, inside bool) {
	if q == nil {
		return
	}
	switch {
	case q.Samples == 0 && q.Error != "":
		fmt.Fprintf(b, "  %-12s not sampled: %s\n", "Accept queue", q.Error)
	case !inside:
		fmt.Fprintf(b, "  %-12s no sample inside the measured period (%s)\n", "Accept queue", figure.Counted(q.Samples, "sample", "samples"))
	default:
		per := make([]string, len(p.PerListener))
		for i, v := range p.PerListener {
			per[i] = groupDigits(uint64(v))
		}
		fmt.Fprintf(b, "  %-12s peak %s connections waiting (%s: %s; backlog %d), measured period, sampled every %g ms: a lower bound\n",
			"Accept queue", groupDigits(uint64(p.Sum)), figure.Counted(q.Listeners, "listener", "listeners"), strings.Join(per, ", "), q.Backlog, q.EveryMs)
	}
	if q.Failed > 0 && q.Samples > 0 {
		fmt.Fprintf(b, "  %-12s   %d of %d readings failed: %s\n", "", q.Failed, q.Failed+q.Samples, q.Error)
	}
}

// writeChurn prints what became of the churn connections, in the
// invariants' order (loadgen.ChurnOutcome).
func writeChurn(b *strings.Builder, o *loadgen.ChurnOutcome) {
	if o == nil {
		return
	}
	fmt.Fprintf(b, "  %-12s churn: scheduled %s = opened %s + skipped %s (churn_max open); opened = connected %s + refused %s + timed out %s + failed %s;\n"+
		"  %-12s        connected = answered %s + rejected %s + wrong bytes %s + reset %s + closed %s + unanswered %s; at most %d open\n",
		"", groupDigits(o.Scheduled), groupDigits(o.Opened), groupDigits(o.Skipped), groupDigits(o.Connected), groupDigits(o.Refused),
		groupDigits(o.ConnectTimeouts), groupDigits(o.ConnectErrors), "", groupDigits(o.Answered), groupDigits(o.Rejected),
		groupDigits(o.WrongBytes), groupDigits(o.Reset), groupDigits(o.Closed), groupDigits(o.Unanswered), o.MaxOpen)
	if !o.Balanced() {
		fmt.Fprintf(b, "  %-12s        (the sums do not balance: a bug of the load generator's)\n", "")
	}
}
