//go:build linux

package loadgen

// The sending side of a source: the schedule, building a batch of frames,
// writing it directly or as a wire fault's plan, marking frames sent.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/internal/epollsys"
	"github.com/reactorlab/reactorlab/wire"
)

// start begins the source's part of the measured schedule, which starts
// at l.schedStart: its timetable and its urgent ticks are offset by it
// and end at the end of sending; a source not yet sending begins.
func (c *conn) start() {
	l := c.l
	if c.kind != kindHot {
		c.phase += l.schedStart
		if c.endSeq != 0 {
			c.endSeq = c.firstFrom(l.sendEnd)
		}
	}
	if u := c.urgent; u != nil {
		u.phase += l.schedStart
		u.endTick = u.firstFrom(l.sendEnd)
	}
	if !c.started {
		c.begin()
	}
}

// begin lets the source send: at the start of the measured schedule, or
// for a hot source at the start of a hot lead.
func (c *conn) begin() {
	c.started = true
	c.resume()
}

// resume sends whatever the source may send now (nothing before begin).
func (c *conn) resume() {
	if !c.started {
		return
	}
	switch c.kind {
	case kindHot:
		c.refill()
	default:
		c.sendDue()
	}
}

// schedule is an open loop's timetable: item k (a steady or control
// source's frame seq, an urgent tick) is intended at phase + k·period, in
// ns since the start of sending; period > 0. With drawn (a steady source
// under Poisson arrivals) the times are drawn instead, at period's mean.
type schedule struct {
	period float64 // ns between items
	phase  int64   // intended time of item 0
	drawn  *drawnTimes
	bunch  uint64 // > 1: Config.arrivalBunch, the generator fault
}

// intended returns the intended time of item k.
func (s schedule) intended(k uint64) int64 {
	if s.drawn != nil {
		return s.drawn.at(k)
	}
	if s.bunch > 1 {
		k -= k % s.bunch
	}
	return s.phase + int64(float64(k)*s.period)
}

// firstFrom returns the first item intended at or after t.
func (s schedule) firstFrom(t int64) uint64 {
	if s.drawn != nil {
		return s.drawn.firstFrom(t)
	}
	if t <= s.phase {
		return 0
	}
	k := uint64(float64(t-s.phase) / s.period)
	for k > 0 && s.intended(k-1) >= t {
		k--
	}
	for s.intended(k) < t {
		k++
	}
	return k
}

// drawnTimes is a Poisson timetable: item k is intended at the sum of
// k+1 exponential gaps of mean period (ns), drawn from a generator of its
// own, and kept from item 0 as far as it has been asked for (a run's
// timetable is bounded by MaxPoissonArrivals).
type drawnTimes struct {
	rng    *rand.Rand
	period float64
	next   float64 // the time of the next item to draw
	times  []int64
	bunch  int // > 1: Config.arrivalBunch, the generator fault
}

// newDrawnTimes is source index's timetable under seed.
func newDrawnTimes(seed, index uint64, period float64) *drawnTimes {
	d := &drawnTimes{rng: rand.New(rand.NewPCG(seed, index)), period: period}
	d.next = d.rng.ExpFloat64() * period
	return d
}

// draw appends the next item's time.
func (d *drawnTimes) draw() {
	d.times = append(d.times, int64(d.next))
	if d.bunch > 1 {
		if len(d.times)%d.bunch != 0 {
			return // the group's next item at the same instant
		}
		d.next += d.rng.ExpFloat64() * d.period * float64(d.bunch)
		return
	}
	d.next += d.rng.ExpFloat64() * d.period
}

// at is item k's time.
func (d *drawnTimes) at(k uint64) int64 {
	for uint64(len(d.times)) <= k {
		d.draw()
	}
	return d.times[k]
}

// firstFrom is the first item intended at or after t; for t = never (no
// end set yet), none: math.MaxUint64, as a fixed timetable's far future.
func (d *drawnTimes) firstFrom(t int64) uint64 {
	if t >= never {
		return math.MaxUint64
	}
	for len(d.times) == 0 || d.times[len(d.times)-1] < t {
		d.draw()
	}
	return uint64(sort.Search(len(d.times), func(i int) bool { return d.times[i] >= t }))
}

// scheduledIn counts the seqs intended in [from, to).
func (c *conn) scheduledIn(from, to int64) uint64 {
	if to <= from {
		return 0
	}
	return c.firstFrom(to) - c.firstFrom(from)
}

// busy reports whether a batch is still being written.
func (c *conn) busy() bool { return c.plan != nil || c.outOff < len(c.out) }

// sentOutstanding counts frames written in full and not settled.
func (c *conn) sentOutstanding() int { return c.live - int(c.nextSeq-c.sentSeq) }

// block notes that due frames wait, for cause (the first cause is kept
// until the wait ends). The wait began when the first of them was due.
func (c *conn) block(cause blockCause) {
	if c.blockedSince < 0 {
		c.blockedSince, c.blockedWhy = min(c.l.now, c.intended(c.nextSeq)), cause
	}
}

// unblock ends a wait.
func (c *conn) unblock() {
	if c.blockedSince >= 0 {
		c.blocked[c.blockedWhy] += c.l.now - c.blockedSince
		c.blockedSince = -1
	}
}

// refill tops a hot source up to K frames in flight, in one batch.
func (c *conn) refill() {
	if c.state != stOpen || c.busy() || c.l.phase != phaseSending {
		return
	}
	n := min(c.limit-c.live, len(c.ring)-int(c.nextSeq-c.lowSeq))
	if n <= 0 {
		return
	}
	c.out = slices.Grow(c.out[:0], n*c.frameSize)
	now := c.l.now
	for range n {
		c.appendFrame(c.nextSeq, now)
	}
	c.send()
}

// sendDue writes every frame of a steady or control source that is due,
// as far as the window allows, in one batch.
func (c *conn) sendDue() {
	l := c.l
	if l.phase != phaseSending || !c.started || c.nextSeq >= c.endSeq {
		c.unblock()
		return
	}
	now := l.now
	if c.intended(c.nextSeq) > now {
		c.unblock()
		return // nothing due
	}
	switch {
	case c.state != stOpen:
		c.block(blockFault) // reconnecting or closing after a fault
		return
	case c.plan != nil:
		c.block(blockFault)
		return
	case c.outOff < len(c.out):
		c.block(blockSocket)
		return
	}
	last := min(c.firstFrom(now+1), c.endSeq) // first seq not due
	count := int(last - c.nextSeq)
	room := c.limit - int(c.nextSeq-c.lowSeq)
	n := min(count, room)
	if n > 0 {
		if c.blockedSince >= 0 {
			c.unblockedAt = now // the connection could take frames again from now
		}
		c.out = slices.Grow(c.out[:0], n*c.frameSize)
		lags := l.scratch[2][:0]
		for range n {
			intended := c.intended(c.nextSeq)
			if c.kind == kindSteady {
				lags = append(lags, now-max(intended, c.unblockedAt))
			}
			c.appendFrame(c.nextSeq, intended)
		}
		if len(lags) > 0 {
			l.cLag.RecordBatch(lags)
		}
		l.scratch[2] = lags
	}
	if n < count {
		c.block(blockWindow)
	} else {
		c.unblock()
	}
	if n > 0 {
		c.send()
	}
}

// appendFrame builds frame seq at the end of c.out (which has room) and
// records it in the ring.
func (c *conn) appendFrame(seq uint64, stamp int64) {
	off := len(c.out)
	c.out = c.out[:off+c.frameSize]
	b := c.out[off:]
	wire.PutHeader(b, wire.Header{Length: uint32(c.frameSize - 4), Kind: c.frameKind, Token: c.token, Seq: seq, SendNs: uint64(stamp)})
	d := fillPattern(b[wire.HeaderSize:], c.token, seq) // wire.FillPattern's bytes
	c.built += uint64(c.frameSize)
	// Field by field, not as a slot literal: the compiler builds a literal
	// on the stack in 8-byte stores and copies it into the ring with
	// 16-byte loads, which cannot be forwarded from the narrower stores and
	// wait for them (the copy held 17% of BenchmarkFrameCost k=256's
	// samples, most of it waiting for fillPattern's digest; 2-3% of its
	// ns/frame went with it).
	s := &c.ring[seq&c.mask]
	s.seq, s.stamp, s.actual, s.end, s.digest, s.state = seq, stamp, 0, c.built, d, slotBuilt
	c.nextSeq = seq + 1
	c.live++
	c.maxInFlight = max(c.maxInFlight, c.live)
}

// queueStop appends the STOP frame to the control connection's stream.
func (c *conn) queueStop() {
	if !c.busy() {
		c.out, c.outOff = c.out[:0], 0
	}
	c.out = wire.AppendFrame(c.out, wire.KindStop, 0, c.token, stopSeq, uint64(c.l.now), nil)
	c.built += wire.HeaderSize
	c.flush()
}

// send writes the batch in c.out: directly, or as a faulted plan on a data
// connection.
func (c *conn) send() {
	if len(c.l.faults) > 0 && c.kind != kindControl {
		frames := make([][]byte, 0, len(c.out)/c.frameSize)
		for off := 0; off < len(c.out); off += c.frameSize {
			frames = append(frames, c.out[off:off+c.frameSize:off+c.frameSize])
		}
		plan := faults.Writes(frames...)
		for _, f := range c.l.faults {
			plan = f.Apply(plan)
		}
		c.plan, c.planPos, c.stepOff = plan, 0, 0
		c.runPlan()
		return
	}
	c.flush()
}

// flush writes what is left of c.out (no plan).
func (c *conn) flush() {
	if !c.writeFrom(c.out, &c.outOff) {
		return
	}
	c.out, c.outOff = c.out[:0], 0
	c.wantWrite(c.urgentWaitsWrite())
}

// writeFrom writes b[*off:], advancing *off and marking what went out as
// sent. It reports whether all of b is written; if not, the socket is full
// (EPOLLOUT is asked for) or the target has gone (the connection is
// closed).
func (c *conn) writeFrom(b []byte, off *int) bool {
	if u := c.l.ur; u != nil && u.active {
		// The round's send, submitted with the wait; its completion marks
		// the frames sent (uringIO.complete).
		if *off < len(b) {
			u.queueSend(c)
			return false
		}
		return true
	}
	for *off < len(b) {
		n, e := epollsys.Write(c.fd, b[*off:])
		if e == unix.EAGAIN {
			c.wantWrite(true)
			return false
		}
		if e != 0 {
			c.targetClosed(os.NewSyscallError("write", e))
			return false
		}
		*off += n
		c.written += uint64(n)
		c.markSent()
	}
	return true
}

// runPlan plays the plan from where it stopped, until it ends or must wait
// (socket full, a sleep).
func (c *conn) runPlan() {
	for c.planPos < len(c.plan) {
		s := c.plan[c.planPos]
		switch s.Op {
		case faults.OpWrite:
			if !c.writeFrom(s.Data, &c.stepOff) {
				return
			}
			c.wantWrite(false)
		case faults.OpSleep:
			if s.For > 0 {
				c.planPos++
				c.stepOff = 0
				c.planWait = c.l.now + int64(s.For)
				return
			}
		case faults.OpPauseReading:
			c.pauseReading(c.l.now + int64(s.For))
		case faults.OpCloseWrite:
			if err := unix.Shutdown(c.fd, unix.SHUT_WR); err != nil {
				c.targetClosed(os.NewSyscallError("shutdown", err))
				return
			}
			c.halfClosed = true
		case faults.OpClose, faults.OpReset, faults.OpReconnect:
			c.faultClose(s.Op == faults.OpReset)
			return
		default:
			c.die(fmt.Sprintf("fault plan step %d: undefined op %v", c.planPos, s.Op), &c.acct.Lost)
			return
		}
		c.planPos++
		c.stepOff = 0
	}
	c.plan = nil
	c.out, c.outOff = c.out[:0], 0
	switch {
	case c.halfClosed:
		c.beginClosing(closingHalfClose)
	case c.l.overSize:
		c.beginClosing(closingOverSize)
	}
}

// markSent settles the frames whose last byte has been written as sent.
func (c *conn) markSent() {
	now := c.l.now
	for c.sentSeq < c.nextSeq {
		s := &c.ring[c.sentSeq&c.mask]
		if s.end > c.written {
			break
		}
		s.state, s.actual = slotSent, now
		c.acct.Sent++
		if c.kind == kindSteady && s.stamp >= c.l.measureFrom && s.stamp < c.l.sendEnd {
			c.measuredSent++
			if c.l.sentLog != nil {
				c.l.sentLog.Add(now, int64(c.idx))
			}
		}
		c.sentSeq++
	}
	if c.serviceFrom < 0 && c.sentOutstanding() > 0 {
		c.serviceFrom = now
	}
}
