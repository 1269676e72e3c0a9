//go:build linux

package loadgen

// The end of a run: settling what is outstanding, the Result, the
// self-check and each connection's verdict.

import (
	"fmt"
	"slices"
	"strings"
	"time"

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
	l.rec.Close(time.Duration(l.now))
}

// result assembles the Result.
func (l *loop) result() *Result {
	r := &Result{Config: l.cfg, Recorder: l.rec, Start: l.startWall, Interrupted: l.interrupted, Stop: l.stop}
	r.Measured = time.Duration(max(0, l.sendStopped-l.measureFrom))
	for _, c := range l.conns {
		cr := c.result()
		r.Conns = append(r.Conns, cr)
		if c.kind == kindControl {
			r.ControlTotals.add(cr.Accounting)
			if l.cfg.ControlEvery > 0 {
				r.addHealth(c.health.counts)
			}
		} else {
			r.Totals.add(cr.Accounting)
			if c.urgent != nil {
				r.addUrgent(c.urgent.counts)
			}
		}
		if cr.Accounting.bad() {
			l.invalid = append(l.invalid, c.verdict())
		}
		if c.endedSending && !(l.stopAcked && c.endedAfterStop) {
			l.invalid = append(l.invalid, fmt.Sprintf("%s (token %#x) ended at %.3f s, while sending: %s",
				c.name, c.firstToken, time.Duration(c.endedAt).Seconds(), c.ended))
		}
	}
	if r.Stop != nil {
		if r.Stop.Status == "" {
			r.Stop.Status = "not acknowledged: no answer"
		}
		r.Stop.DataAnswered = r.Totals.Echoed + r.Totals.Rejected
		// With no wire fault of ours (which abandons frames the target may
		// have admitted), the target admitted exactly the DATA frames we saw
		// answered: a frame it counts but never sent back is a loss its
		// ledger confesses.
		if led := r.Stop.Ledger; led != nil && len(l.faults) == 0 && led.Accepted != r.Stop.DataAnswered {
			l.invalid = append(l.invalid, fmt.Sprintf("STOP_ACK ledger accepted %d DATA frames, we saw %d answered",
				led.Accepted, r.Stop.DataAnswered))
		}
	}
	l.judgeUrgent(r.Urgent)
	r.Invalid = l.invalid
	r.Valid = len(r.Invalid) == 0
	r.SelfCheck = l.selfCheck(r)
	return r
}

// selfCheck decides which side limited the run.
func (l *loop) selfCheck(r *Result) SelfCheck {
	sc := SelfCheck{TargetRate: l.cfg.Rate}
	measured := r.Measured.Seconds()
	sc.RunS = time.Duration(l.wall).Seconds()
	if l.wall > 0 {
		sc.LoopBusy = float64(l.cpu1-l.cpu0) / float64(l.wall)
	}
	sc.CPUUserS = time.Duration(unix.TimevalToNsec(l.ru1.Utime) - unix.TimevalToNsec(l.ru0.Utime)).Seconds()
	sc.CPUSysS = time.Duration(unix.TimevalToNsec(l.ru1.Stime) - unix.TimevalToNsec(l.ru0.Stime)).Seconds()
	blocked := map[string]float64{}
	var expected, achieved, hotEchoed uint64
	for _, c := range l.conns {
		switch c.kind {
		case kindSteady:
			expected += c.scheduledIn(l.measureFrom, l.sendStopped)
			achieved += c.measuredSent
			for cause, d := range c.blocked {
				if d > 0 {
					blocked[blockCause(cause).String()] += time.Duration(d).Seconds()
				}
			}
		case kindHot:
			hotEchoed += c.measuredEchoed
		}
	}
	if len(blocked) > 0 {
		sc.BlockedS = blocked
	}
	if measured > 0 {
		sc.AchievedRate = float64(achieved) / measured
		sc.HotEchoRate = float64(hotEchoed) / measured
	}
	if h, ok := l.rec.Histogram(ClassSendLag); ok && h.TotalCount() > 0 {
		sc.SendLagP99Us = float64(h.ValueAtPercentile(99)) / 1e3
		sc.SendLagMaxUs = float64(h.Max()) / 1e3
	}
	if l.cfg.Steady > 0 && expected > 0 {
		sc.RateRatio = float64(achieved) / float64(expected)
	}
	sc.Limit, sc.Reasons = judge(checkFigures{Steady: l.cfg.Steady, Rate: l.cfg.Rate, MeasuredS: measured,
		Scheduled: expected, RateRatio: sc.RateRatio, AchievedRate: sc.AchievedRate, SendLagP99Us: sc.SendLagP99Us, SendLagMaxUs: sc.SendLagMaxUs,
		Blocked: blocked, LoopBusy: sc.LoopBusy, Hot: l.cfg.Hot, InFlight: l.cfg.InFlight, HotEchoRate: sc.HotEchoRate})
	return sc
}

// judgeUrgent adds the urgent class's invalid reasons (u nil: no urgent
// class): answers with a byte other than the one outstanding, or with
// none outstanding; bytes never answered, unless the run was interrupted
// or the target acknowledged our STOP.
func (l *loop) judgeUrgent(u *UrgentOutcome) {
	if u == nil {
		return
	}
	if u.Mismatched+u.Unsolicited > 0 {
		l.invalid = append(l.invalid, fmt.Sprintf("urgent: %d answers with a byte other than the one outstanding, %d with none outstanding, of %d urgent bytes sent",
			u.Mismatched, u.Unsolicited, u.Sent))
	}
	if u.Unanswered > 0 && !l.interrupted && !l.stopAcked {
		l.invalid = append(l.invalid, fmt.Sprintf("urgent: %d of %d urgent bytes unanswered when the run ended (after a drain of %v)",
			u.Unanswered, u.Sent, l.cfg.Drain))
	}
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
	s := fmt.Sprintf("%s (token %#x, %d connection(s)): %s, of %d sent", c.name, c.firstToken, c.connections, strings.Join(parts, ", "), a.Sent)
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
