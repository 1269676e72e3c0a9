//go:build linux

package loadgen

// The end of a run: settling what is outstanding, the Result, the
// self-check and each connection's verdict.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/record"
	"golang.org/x/sys/unix"
)

// finish settles what is still outstanding and closes every connection.
func (l *loop) finish() {
	for _, c := range l.conns {
		if c.pendingStop > 0 {
			if l.stopAcked {
				c.acct.Unanswered += c.pendingStop
			} else {
				c.acct.Lost += c.pendingStop
				c.addEvidence("%d frames unanswered when the target closed the connection after our STOP, which it never acknowledged", c.pendingStop)
			}
			c.pendingStop = 0
		}
		switch {
		case l.interrupted || l.stopAcked:
			c.settleSent(&c.acct.Unanswered, "")
		case c.state == stClosing && c.closing == closingOverSize:
			c.settleSent(&c.acct.Abandoned, "")
		default:
			c.settleSent(&c.acct.Lost, "unanswered when the run ended (after a drain of "+l.cfg.Drain.String()+")")
		}
		if c.urgent != nil {
			c.finishUrgent(l.sendStopped)
		}
		c.unblock()
		c.closeFd(false)
	}
	if l.churn != nil {
		l.churn.finish()
	}
	l.rec.Close(time.Duration(l.now))
}

// result assembles the run's Result from its loops, each finished: every
// connection's outcome in the run's order, the STOP and urgent checks over
// the whole run, the recorders merged, and the self-check of each loop and
// of the whole.
func (g *group) result() (*Result, error) {
	r := &Result{Config: g.cfg, Start: g.startWall}
	var invalid []string
	for _, l := range g.loops {
		r.Interrupted = r.Interrupted || l.interrupted
		r.Measured = max(r.Measured, time.Duration(max(0, l.sendStopped-l.measureFrom)))
		invalid = append(invalid, l.invalid...) // found while running (a STOP_ACK's ledger)
	}
	if g.stopLoop != nil {
		r.Stop = g.stopLoop.stop
	}
	if g.cfg.ChurnRate > 0 {
		r.Churn = &ChurnOutcome{}
		for _, l := range g.loops {
			r.Churn.add(l.churn.counts)
		}
		invalid = append(invalid, r.Churn.invalid(r.Interrupted || g.stopAcked.Load())...)
	}
	for _, c := range g.conns() {
		cr := c.result()
		r.Conns = append(r.Conns, cr)
		if c.kind == kindControl {
			r.ControlTotals.add(cr.Accounting)
			if g.cfg.ControlEvery > 0 {
				r.addHealth(c.health.counts)
			}
		} else {
			r.Totals.add(cr.Accounting)
			if c.urgent != nil {
				r.addUrgent(c.urgent.counts)
			}
		}
		if cr.Accounting.bad() {
			invalid = append(invalid, c.verdict())
		}
		if c.endedSending && !(c.l.stopAcked && c.endedAfterStop) {
			invalid = append(invalid, fmt.Sprintf("%s (token %#x) ended at %.3f s, while sending: %s",
				c.name, c.firstToken, time.Duration(c.endedAt).Seconds(), c.ended))
		}
	}
	if r.Stop != nil {
		if r.Stop.Status == "" {
			r.Stop.Status = "not acknowledged: no answer"
		}
		r.Stop.DataAnswered = r.Totals.Echoed + r.Totals.Rejected
		if r.Churn != nil {
			r.Stop.DataAnswered += r.Churn.Answered + r.Churn.Rejected // the churn's frames are DATA too
		}
		// With no wire fault of ours (which abandons frames the target may
		// have admitted), the target admitted exactly the DATA frames we saw
		// answered: a frame it counts but never sent back is a loss its
		// ledger confesses.
		if led := r.Stop.Ledger; led != nil && len(g.cfg.Faults) == 0 && led.Accepted != r.Stop.DataAnswered {
			invalid = append(invalid, fmt.Sprintf("STOP_ACK ledger accepted %d DATA frames, we saw %d answered",
				led.Accepted, r.Stop.DataAnswered))
		}
	}
	invalid = append(invalid, g.judgeUrgent(r.Urgent, r.Interrupted)...)
	r.Invalid = invalid
	r.Valid = len(r.Invalid) == 0
	if err := g.mergeRecorders(r); err != nil {
		return nil, err
	}
	if len(g.loops) == 1 && g.loops[0].precision != nil { // one loop: Validate
		p := *g.loops[0].precision
		r.Precision = &p
	}
	g.selfChecks(r)
	return r, nil
}

// mergeRecorders sets r.Recorder: the one loop's, or the lossless merge
// of every loop's (they share the start, interval and warm-up).
func (g *group) mergeRecorders(r *Result) error {
	if len(g.loops) == 1 {
		r.Recorder = g.loops[0].rec
		return nil
	}
	recs := make([]*record.Recorder, len(g.loops))
	for i, l := range g.loops {
		recs[i] = l.rec
	}
	m, err := record.MergeRecorders(recs...)
	if err != nil {
		return fmt.Errorf("loadgen: merging the loops' histograms: %w", err)
	}
	r.Recorder = m
	return nil
}

// selfChecks sets each loop's report (r.Loops) and the run's self-check:
// the whole run's figures judged as one, and, with several loops, the
// generator is the limit when any loop was, the reasons naming the loop.
func (g *group) selfChecks(r *Result) {
	var busiest float64
	var wall int64
	var loopWhy []string
	for _, l := range g.loops {
		lr := LoopReport{Index: l.index, Tid: l.tid, CPU: l.cpu, Recorder: l.rec}
		for _, c := range l.conns {
			lr.Connections = append(lr.Connections, c.name)
			if c.kind == kindControl {
				lr.ControlTotals.add(c.acct)
			} else {
				lr.Totals.add(c.acct)
			}
		}
		sendLag, _ := l.rec.Histogram(ClassSendLag)
		busy := 0.0
		if l.wall > 0 {
			busy = float64(l.cpu1-l.cpu0) / float64(l.wall)
		}
		var churn *ChurnOutcome
		if l.churn != nil {
			churn = &l.churn.counts
			lr.Churn = churn
		}
		lr.SelfCheck = g.selfCheck(l.conns, sendLag, r.Measured, l.wall, busy, &l.ru0, &l.ru1)
		lr.SelfCheck.judgeChurn(l.rec, churn, g.cfg.ChurnMax)
		if lr.SelfCheck.Limit == LimitLoadgen && len(g.loops) > 1 {
			on := "not pinned"
			if l.cpu >= 0 {
				on = fmt.Sprintf("on CPU %d", l.cpu)
			}
			loopWhy = append(loopWhy, fmt.Sprintf("loop %d (%s, serving %s) was the limit: %s",
				l.index, on, strings.Join(lr.Connections, " "), strings.Join(lr.SelfCheck.loadgenReasons, "; ")))
		}
		r.Loops = append(r.Loops, lr)
		busiest = max(busiest, busy)
		wall = max(wall, l.wall)
	}
	sendLag, _ := r.Recorder.Histogram(ClassSendLag)
	sc := g.selfCheck(g.conns(), sendLag, r.Measured, wall, busiest, &g.ru0, &g.ru1)
	sc.judgeChurn(r.Recorder, r.Churn, g.cfg.ChurnMax)
	if len(loopWhy) > 0 {
		sc.Limit = LimitLoadgen
		sc.Reasons = append(loopWhy, sc.Reasons...)
	}
	r.SelfCheck = sc
	r.SelfCheck.Gates = g.gates(r)
}

// selfCheck decides which side limited the part of the run that conns
// are (one loop's sources, or every one): their steady sources against
// their share of the rate over their loops' measured time, sendLag their
// send lag, busy the loop thread's busy fraction (the busiest loop's for
// the whole), ru0 and ru1 the CPU spent (the thread's or the process's)
// over wall.
func (g *group) selfCheck(conns []*conn, sendLag *hdrhistogram.Histogram, measured time.Duration, wall int64, busy float64, ru0, ru1 *unix.Rusage) SelfCheck {
	sc := SelfCheck{Engine: g.cfg.Engine, LoopBusy: busy, RunS: time.Duration(wall).Seconds()}
	sc.Uring = uringCountsOf(conns)
	sc.CPUUserS = time.Duration(unix.TimevalToNsec(ru1.Utime) - unix.TimevalToNsec(ru0.Utime)).Seconds()
	sc.CPUSysS = time.Duration(unix.TimevalToNsec(ru1.Stime) - unix.TimevalToNsec(ru0.Stime)).Seconds()
	blocked := map[string]float64{}
	var expected, achieved, hotEchoed uint64
	steady, hot := 0, 0
	for _, c := range conns {
		switch c.kind {
		case kindSteady:
			steady++
			expected += c.scheduledIn(c.l.measureFrom, c.l.sendStopped)
			achieved += c.measuredSent
			for cause, d := range c.blocked {
				if d > 0 {
					blocked[blockCause(cause).String()] += time.Duration(d).Seconds()
				}
			}
		case kindHot:
			hot++
			hotEchoed += c.measuredEchoed
		}
	}
	if g.cfg.Steady > 0 {
		sc.TargetRate = g.cfg.Rate * float64(steady) / float64(g.cfg.Steady)
	}
	if len(blocked) > 0 {
		sc.BlockedS = blocked
	}
	if s := measured.Seconds(); s > 0 {
		sc.AchievedRate = float64(achieved) / s
		sc.HotEchoRate = float64(hotEchoed) / s
	}
	if sendLag != nil && sendLag.TotalCount() > 0 {
		sc.SendLagP99Us = float64(sendLag.ValueAtPercentile(99)) / 1e3
		sc.SendLagMaxUs = float64(sendLag.Max()) / 1e3
	}
	if steady > 0 && expected > 0 {
		sc.RateRatio = float64(achieved) / float64(expected)
	}
	var targetWhy []string
	sc.loadgenReasons, targetWhy = judgeParts(checkFigures{Steady: steady, Rate: sc.TargetRate, MeasuredS: measured.Seconds(),
		Scheduled: expected, RateRatio: sc.RateRatio, AchievedRate: sc.AchievedRate, SendLagP99Us: sc.SendLagP99Us, SendLagMaxUs: sc.SendLagMaxUs,
		Blocked: blocked, LoopBusy: sc.LoopBusy, Hot: hot, InFlight: g.cfg.InFlight, HotEchoRate: sc.HotEchoRate})
	sc.Limit, sc.Reasons = limitOf(sc.loadgenReasons, targetWhy)
	return sc
}

// judgeUrgent returns the urgent class's invalid reasons (u nil: no
// urgent class): answers with a byte other than the one outstanding, or
// with none outstanding; bytes never answered, unless the run was
// interrupted or the target acknowledged our STOP.
func (g *group) judgeUrgent(u *UrgentOutcome, interrupted bool) []string {
	if u == nil {
		return nil
	}
	var out []string
	if u.Mismatched+u.Unsolicited > 0 {
		out = append(out, fmt.Sprintf("urgent: %d answers with a byte other than the one outstanding, %d with none outstanding, of %d urgent bytes sent",
			u.Mismatched, u.Unsolicited, u.Sent))
	}
	if u.Unanswered > 0 && !interrupted && !g.stopAcked.Load() {
		out = append(out, fmt.Sprintf("urgent: %d of %d urgent bytes unanswered when the run ended (after a drain of %v)",
			u.Unanswered, u.Sent, g.cfg.Drain))
	}
	return out
}

// addEvidence keeps the first few anomalies of a connection.
func (c *conn) addEvidence(format string, args ...any) {
	const maxEvidence = 5
	if len(c.evidence) < maxEvidence {
		c.evidence = append(c.evidence, fmt.Sprintf(format, args...))
	}
}

// verdict is the invalid reason for a connection with bad accounting.
func (c *conn) verdict() string {
	a := c.acct
	var parts []string
	for _, p := range []struct {
		n    uint64
		what string
	}{{a.Lost, "lost"}, {a.Duplicated, "duplicated"}, {a.CorruptedAnswers, "answered corrupted"},
		{a.Unexpected, "unexpected frames received"}, {a.WrongConn, "delivered to the wrong connection"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	s := fmt.Sprintf("%s (token %#x, %s): %s, of %d sent", c.name, c.firstToken, figure.Counted(c.connections, "connection", "connections"), strings.Join(parts, ", "), a.Sent)
	if len(c.evidence) > 0 {
		s += "; first: " + c.evidence[0]
	}
	return s
}

func (c *conn) result() ConnResult {
	acct := c.acct
	cr := ConnResult{Name: c.name, Kind: c.kind.String(), Token: c.firstToken, Connections: c.connections,
		Accounting: acct, MaxInFlight: c.maxInFlight, OverSizeRejected: c.overSizeRejected,
		ConnectErrors: c.connectErrors, Evidence: slices.Clone(c.evidence), Ended: c.ended}
	if c.kind == kindControl && c.l.cfg.ControlEvery > 0 {
		h := c.health.counts
		cr.HealthCheck = &h
	}
	if c.urgent != nil {
		u := c.urgent.counts
		cr.Urgent = &u
	}
	for cause, d := range c.blocked {
		if d > 0 {
			if cr.BlockedS == nil {
				cr.BlockedS = map[string]float64{}
			}
			cr.BlockedS[blockCause(cause).String()] = time.Duration(d).Seconds()
		}
	}
	return cr
}
