//go:build linux

package loadgen

// The urgent class (Config.UrgentEvery) on a data connection: its ticks,
// the one urgent byte outstanding, the answer read with recv(MSG_OOB), and
// the counts of UrgentOutcome.

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// urgentSource is one data connection's share of the urgent class. Ticks
// below next have been sent; ticks below counted have been judged
// skipped or not. At most one byte is outstanding (out); none is sent
// while the socket refuses it (waitWrite) until it turns writable, nor
// while the in-band reads have not reached the last answer's mark
// (behindMark): the next urgent byte makes the target answer, and an
// answer arriving before our reads reach the previous one's mark would
// turn that previous byte into an in-band byte of the frame stream (see
// "Urgent data" in the package doc).
type urgentSource struct {
	schedule
	next       uint64 // next tick to send
	endTick    uint64 // first tick intended at or after the end of sending
	counted    uint64 // ticks below it are counted in Skipped if they were skipped
	out        bool   // an urgent byte awaits its answer
	outByte    byte   // its value
	outStamp   int64  // its tick's intended time
	waitWrite  bool   // the socket refused the byte (EAGAIN): retried when writable
	behindMark bool   // an answer was read, in-band bytes before its mark may not be
	counts     UrgentOutcome
}

// newUrgentSource is data connection i's of n: its ticks are every
// n·every, from i·every.
func newUrgentSource(every time.Duration, i, n int) *urgentSource {
	return &urgentSource{schedule: schedule{period: float64(every) * float64(n), phase: int64(every) * int64(i)}, endTick: never}
}

// urgentValue is the byte sent at tick k: 1..255, changing every tick, so
// that an answer to another tick's byte is seen.
func urgentValue(k uint64) byte { return byte(1 + k%255) }

// urgentWaitsWrite reports whether an urgent byte waits for the socket to
// turn writable.
func (c *conn) urgentWaitsWrite() bool { return c.urgent != nil && c.urgent.waitWrite }

// urgentDeadline is when c's next urgent tick is due, or never: nothing
// is sent while a byte is outstanding (its answer resumes the source),
// waits for the socket (EPOLLOUT resumes it) or for the in-band reads to
// reach the answer's mark (a short read resumes it), nor outside sending
// or during a hot lead.
func (c *conn) urgentDeadline() int64 {
	u := c.urgent
	if c.l.phase != phaseSending || c.l.leading || c.state != stOpen || u.out || u.waitWrite || u.behindMark || u.next >= u.endTick {
		return never
	}
	return u.intended(u.next)
}

// urgentReadShort notes an in-band read that returned less than it asked
// for (or EAGAIN): the reads are at or past the last urgent answer's mark
// (an in-band read stops at the mark, and the answer's byte has arrived,
// so everything before it has too).
func (c *conn) urgentReadShort() {
	if c.urgent != nil {
		c.urgent.behindMark = false
	}
}

// sendUrgentDue sends the next urgent tick if it is due and c may send it.
func (c *conn) sendUrgentDue() {
	u := c.urgent
	if c.urgentDeadline() > c.l.now {
		return
	}
	k := u.next
	v := urgentValue(k)
	switch e := sendOOB(c.fd, v); e {
	case 0:
	case unix.EAGAIN:
		// The send buffer is full: the tick is late, and skipped at its
		// time if it has not been counted yet.
		if k >= u.counted {
			u.counts.Skipped++
			u.counted = k + 1
		}
		u.waitWrite = true
		c.wantWrite(true)
		return
	default:
		c.targetClosed(os.NewSyscallError("send MSG_OOB", e))
		return
	}
	u.out, u.outByte, u.outStamp = true, v, u.intended(k)
	u.next = k + 1
	u.counts.Sent++
}

// onUrgent reads the urgent byte that EPOLLPRI announced and settles the
// byte outstanding with it: answered (its latency recorded in class
// "urgent"), mismatched, or unsolicited if none was outstanding. The
// ticks held back meanwhile are counted as skipped; the next one due
// goes once the in-band reads have reached the answer's mark: at once if
// the event had no in-band data (inBand false), else after the read that
// follows (see onEvent).
func (c *conn) onUrgent(inBand bool) {
	u := c.urgent
	v, e := recvOOB(c.fd)
	if e != 0 {
		// EAGAIN: the mark is announced but its byte has not arrived;
		// EINVAL: no urgent byte to read. Another error is the in-band
		// read's to see.
		return
	}
	now := c.l.clock()
	switch {
	case !u.out:
		u.counts.Unsolicited++
		c.addEvidence("urgent byte %#02x received with none outstanding", v)
		return
	case v != u.outByte:
		u.counts.Mismatched++
		c.addEvidence("urgent byte %#02x (tick intended at %.6f s) answered with %#02x", u.outByte, time.Duration(u.outStamp).Seconds(), v)
	default:
		u.counts.Answered++
		c.l.cUrgent.Record(time.Duration(now - u.outStamp))
	}
	u.out = false
	u.behindMark = inBand
	u.countSkipped(min(u.firstFrom(now), u.endTick))
}

// countSkipped counts the unsent ticks below due as skipped (each once):
// they were intended while the connection could not send them.
func (u *urgentSource) countSkipped(due uint64) {
	if from := max(u.next, u.counted); due > from {
		u.counts.Skipped += due - from
	}
	u.counted = max(u.counted, due)
}

// finishUrgent settles c's urgent class when the run ends, sending having
// stopped at stopped: a byte still outstanding is unanswered, and the
// ticks intended before stopped and never sent are not sent (and skipped).
func (c *conn) finishUrgent(stopped int64) {
	u := c.urgent
	end := min(u.firstFrom(stopped), u.endTick)
	u.countSkipped(end)
	if end > u.next {
		u.counts.NotSent += end - u.next
		u.next = end
	}
	if u.out {
		u.counts.Unanswered++
		u.out = false
	}
}
