//go:build linux

package loadgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/wire"
)

type connKind uint8

const (
	kindHot connKind = iota
	kindSteady
	kindControl
)

func (k connKind) String() string {
	switch k {
	case kindHot:
		return "hot"
	case kindSteady:
		return "steady"
	}
	return "control"
}

// connState is the life of a source's connection:
//
//	connecting → open → (a fault) closing → closed → connecting → …
//	                  → (a fault's close/reset) closed → connecting → …
//	any → dead (the target closed it, it failed, or the run is over)
type connState uint8

const (
	stConnecting connState = iota // non-blocking connect in progress
	stOpen                        // sending and reading
	stClosing                     // after a half-close or an over-size header: reading until the target closes
	stClosed                      // closed by a fault; reconnects at reconnectAt
	stDead                        // finished for good
)

// closingCause is why a connection is in stClosing.
type closingCause uint8

const (
	closingHalfClose closingCause = iota + 1
	closingOverSize
)

// slotState is the state of a frame in the ring.
type slotState uint8

const (
	slotFree  slotState = iota
	slotBuilt           // in the out buffer, not yet written in full
	slotSent            // written in full, awaiting its answer
	slotDone            // settled: echoed, rejected, corrupted, lost, abandoned or unanswered
)

// slot is one frame of a connection's ring, at index seq & mask. Only the
// frames in [lowSeq, nextSeq) are live; the ring is at least as large as
// that span may be, so a live frame is never overwritten.
type slot struct {
	seq    uint64
	stamp  int64  // the header's SendNs: intended time (steady, control) or build time (hot), ns since the run start
	actual int64  // when its last byte was written
	end    uint64 // stream offset just past its last byte, on its physical connection
	digest uint64 // of its payload
	state  slotState
}

// blockCause is why a steady or control source's due frames wait.
type blockCause uint8

const (
	blockWindow blockCause = iota // outstanding frames at the window
	blockSocket                   // the kernel's send buffer is full
	blockFault                    // a wire fault's pause or reconnection
	numBlockCauses
)

func (b blockCause) String() string {
	switch b {
	case blockWindow:
		return "window"
	case blockSocket:
		return "socket"
	}
	return "fault"
}

// conn is one source and its connection (replaced on reconnection).
type conn struct {
	l         *loop
	idx       int
	kind      connKind
	name      string
	sa        unix.Sockaddr
	fd        int
	gen       int32 // bumped per physical connection; travels in epoll_event.Pad
	state     connState
	inEpoll   bool   // fd is in the epoll set
	interest  uint32 // epoll events registered
	token     uint64
	split     splitter // the answer stream, cut into frames
	frameKind wire.Kind
	frameSize int

	ring    []slot
	mask    uint64
	nextSeq uint64 // next seq to build
	sentSeq uint64 // first built seq not yet written in full
	lowSeq  uint64 // oldest seq that may be unsettled
	live    int    // frames built and not settled
	limit   int    // hot: K in flight; steady: window; control: 1

	out     []byte // the batch being written
	outOff  int    // fast path: bytes of out already written
	written uint64 // stream bytes written on this physical connection
	built   uint64 // stream bytes built on this physical connection

	plan     []faults.Step // the batch as a faulted plan, while it plays
	planPos  int
	stepOff  int
	planWait int64 // a plan's sleep ends then (0: none)

	closing         closingCause
	closingDeadline int64
	connectDeadline int64
	reconnectAt     int64
	backoff         int64
	readPaused      bool
	readPausedUntil int64
	halfClosed      bool

	// schedule (steady, control)
	period float64 // ns between frames
	phase  int64   // intended time of seq 0
	endSeq uint64  // first seq intended at or after the end of sending

	blockedSince int64 // -1: not blocked
	blockedWhy   blockCause
	unblockedAt  int64
	blocked      [numBlockCauses]int64

	service     *results.Class
	serviceFrom int64 // -1: nothing outstanding

	acct             Accounting
	measuredSent     uint64 // steady: frames intended in the measured time, sent
	measuredEchoed   uint64 // hot: echoes read in the measured time
	maxInFlight      int
	overSizeRejected uint64
	connectErrors    uint64
	connections      int
	firstToken       uint64
	evidence         []string
	ended            string
	endedAt          int64 // when it ended for good (see die)
	endedSending     bool  // it ended while the run was sending
	endedAfterStop   bool  // it ended after our STOP was sent
	// pendingStop counts frames outstanding when the target closed the
	// connection after our STOP was sent but before its STOP_ACK was read
	// (a target may close everything right after acknowledging, and the
	// close may be read first): unanswered if STOP is acknowledged by the
	// end, lost if not. Settled in finish.
	pendingStop uint64
}

func (c *conn) addr() string {
	switch sa := c.sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port))
	case *unix.SockaddrInet6:
		return net.JoinHostPort(net.IP(sa.Addr[:]).String(), strconv.Itoa(sa.Port))
	}
	return "?"
}

// connect opens a new physical connection with a new token.
func (c *conn) connect() error {
	fd, connected, err := dial(c.sa)
	if err != nil {
		return err
	}
	c.fd = fd
	c.gen++
	c.token = c.l.newToken(c)
	if c.connections == 0 {
		c.firstToken = c.token
	}
	c.connections++
	c.split.reset()
	c.written, c.built = 0, 0
	c.out, c.outOff = c.out[:0], 0
	c.plan, c.planPos, c.stepOff, c.planWait = nil, 0, 0, 0
	c.halfClosed, c.closing = false, 0
	c.serviceFrom = -1
	c.inEpoll, c.interest = false, 0
	if connected {
		c.state = stOpen
		return c.setInterest(c.readInterest())
	}
	c.state = stConnecting
	c.connectDeadline = c.l.now + int64(c.l.cfg.ConnectTimeout)
	if c.l.phase == phaseConnecting {
		c.connectDeadline = c.l.connectDeadline
	}
	return c.setInterest(unix.EPOLLIN | unix.EPOLLOUT)
}

// readInterest is EPOLLIN unless reading is paused (a pause outlives
// reconnections).
func (c *conn) readInterest() uint32 {
	if c.readPaused {
		return 0
	}
	return unix.EPOLLIN
}

// setInterest registers (or changes) the epoll events of c's fd.
func (c *conn) setInterest(events uint32) error {
	if c.inEpoll && c.interest == events {
		return nil
	}
	op := unix.EPOLL_CTL_MOD
	if !c.inEpoll {
		op = unix.EPOLL_CTL_ADD
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(c.idx), Pad: c.gen}
	if err := unix.EpollCtl(c.l.epfd, op, c.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	c.inEpoll, c.interest = true, events
	return nil
}

func (c *conn) wantWrite(on bool) {
	ev := c.interest &^ unix.EPOLLOUT
	if on {
		ev |= unix.EPOLLOUT
	}
	if err := c.setInterest(ev); err != nil {
		c.die(err.Error(), &c.acct.Lost)
	}
}

// start begins sending at the start of the run.
func (c *conn) start() {
	if c.kind != kindHot && c.endSeq != 0 {
		c.endSeq = c.firstSeqFrom(c.l.sendEnd)
	}
	c.resume()
}

// resume sends whatever the source may send now.
func (c *conn) resume() {
	switch c.kind {
	case kindHot:
		c.refill()
	default:
		c.sendDue()
	}
}

// intended returns the intended send time of seq (steady, control).
func (c *conn) intended(seq uint64) int64 {
	return c.phase + int64(float64(seq)*c.period)
}

// firstSeqFrom returns the first seq intended at or after t.
func (c *conn) firstSeqFrom(t int64) uint64 {
	if t <= c.phase {
		return 0
	}
	k := uint64(float64(t-c.phase) / c.period)
	for k > 0 && c.intended(k-1) >= t {
		k--
	}
	for c.intended(k) < t {
		k++
	}
	return k
}

// scheduledIn counts the seqs intended in [from, to).
func (c *conn) scheduledIn(from, to int64) uint64 {
	if to <= from {
		return 0
	}
	return c.firstSeqFrom(to) - c.firstSeqFrom(from)
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
	if l.phase != phaseSending || c.nextSeq >= c.endSeq {
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
	last := min(c.firstSeqFrom(now+1), c.endSeq) // first seq not due
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
	c.ring[seq&c.mask] = slot{seq: seq, stamp: stamp, end: c.built, digest: d, state: slotBuilt}
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
	c.wantWrite(false)
}

// writeFrom writes b[*off:], advancing *off and marking what went out as
// sent. It reports whether all of b is written; if not, the socket is full
// (EPOLLOUT is asked for) or the target has gone (the connection is
// closed).
func (c *conn) writeFrom(b []byte, off *int) bool {
	for *off < len(b) {
		n, e := rawWrite(c.fd, b[*off:])
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
		}
		c.sentSeq++
	}
	if c.serviceFrom < 0 && c.sentOutstanding() > 0 {
		c.serviceFrom = now
	}
}

// pauseReading stops reading until until (a pause in effect is extended,
// never shortened).
func (c *conn) pauseReading(until int64) {
	if c.readPaused && until <= c.readPausedUntil {
		return
	}
	c.readPaused, c.readPausedUntil = true, until
	if c.fd >= 0 {
		if err := c.setInterest(c.interest &^ unix.EPOLLIN); err != nil {
			c.die(err.Error(), &c.acct.Lost)
		}
	}
}

func (c *conn) resumeReading() {
	c.readPaused = false
	if c.fd >= 0 {
		if err := c.setInterest(c.interest | unix.EPOLLIN); err != nil {
			c.die(err.Error(), &c.acct.Lost)
		}
	}
}

// deadline returns the next time c has something to do by itself.
func (c *conn) deadline() int64 {
	w := int64(never)
	switch c.state {
	case stOpen:
		if c.planWait > 0 {
			w = c.planWait
		}
	case stClosing:
		w = c.closingDeadline
	case stConnecting:
		w = c.connectDeadline
	case stClosed:
		if c.l.phase == phaseSending {
			w = c.reconnectAt
		}
	case stDead:
		return never
	}
	if c.readPaused {
		w = min(w, c.readPausedUntil)
	}
	return min(w, c.scheduleDeadline())
}

// scheduleDeadline is when the next frame of a steady or control source is
// due (rounded up to the send grain), or never. It is due even when the
// source cannot send it (window full, socket full, a fault's pause), so that
// the wait is noticed when it begins; once it is, events (answers, the
// socket turning writable, the fault's end) resume the source.
func (c *conn) scheduleDeadline() int64 {
	if c.kind == kindHot || c.l.phase != phaseSending || c.nextSeq >= c.endSeq || c.blockedSince >= 0 {
		return never
	}
	w := c.intended(c.nextSeq)
	if g := c.l.grain; g > 0 && c.kind == kindSteady {
		w = (w + g - 1) / g * g
	}
	return w
}

// fire does what is due at l.now (deadline() <= l.now).
func (c *conn) fire() {
	now := c.l.now
	if c.readPaused && now >= c.readPausedUntil {
		c.resumeReading()
	}
	switch c.state {
	case stOpen:
		if c.planWait > 0 && now >= c.planWait {
			c.planWait = 0
			c.runPlan()
			if c.plan == nil && c.state == stOpen {
				c.resume()
			}
		}
	case stClosing:
		if now >= c.closingDeadline {
			c.endClosing("the target did not close the connection within " + closingWait.String())
		}
	case stConnecting:
		if now >= c.connectDeadline {
			c.connectFailed(fmt.Errorf("not established within %v", c.l.cfg.ConnectTimeout))
		}
	case stClosed:
		if now >= c.reconnectAt && c.l.phase == phaseSending {
			c.reconnect()
		}
	}
	if c.state != stDead && c.scheduleDeadline() <= now {
		c.sendDue()
	}
}

// onEvent handles an epoll event of c's current connection.
func (c *conn) onEvent(ev uint32) {
	gen := c.gen
	if c.state == stConnecting {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			c.finishConnect()
		}
		return
	}
	if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		c.onReadable()
	}
	if ev&unix.EPOLLOUT != 0 && c.fd >= 0 && c.gen == gen && c.state != stDead {
		c.onWritable()
	}
}

func (c *conn) finishConnect() {
	if err := connectResult(c.fd); err != nil {
		c.connectFailed(err)
		return
	}
	c.state = stOpen
	if err := c.setInterest(c.readInterest()); err != nil {
		c.die(err.Error(), &c.acct.Lost)
		return
	}
	if c.l.phase == phaseSending {
		c.resume()
	}
}

func (c *conn) connectFailed(err error) {
	c.closeFd(false)
	if c.l.phase == phaseConnecting {
		c.state, c.ended = stDead, err.Error()
		return
	}
	c.connectErrors++
	c.addEvidence("reconnecting to %s: %v", c.addr(), err)
	c.state = stClosed
	c.backoff = min(max(2*c.backoff, int64(10*time.Millisecond)), int64(500*time.Millisecond))
	c.reconnectAt = c.l.now + c.backoff
}

// reconnect replaces a connection a fault closed.
func (c *conn) reconnect() {
	if err := c.connect(); err != nil {
		c.connectFailed(err)
		return
	}
	if c.state == stOpen {
		c.backoff = 0
		c.resume()
	}
}

func (c *conn) onWritable() {
	if c.plan != nil {
		c.runPlan()
		if c.plan == nil && c.state == stOpen {
			c.resume()
		}
		return
	}
	c.flush()
	if !c.busy() && c.state == stOpen {
		c.resume()
	}
}

// onReadable reads once and handles every complete frame.
func (c *conn) onReadable() {
	l := c.l
	n, e := rawRead(c.fd, l.readBuf)
	now := l.clock()
	switch {
	case e == unix.EAGAIN:
		return
	case e != 0:
		c.peerEnded(os.NewSyscallError("read", e))
		return
	case n == 0:
		c.peerEnded(errEOF)
		return
	}
	c.onAnswers(l.readBuf[:n], now)
}

// onAnswers handles the bytes of one read, received at now: it settles
// every frame they complete, records their latencies, and sends what the
// source may send in their place.
func (c *conn) onAnswers(b []byte, now int64) {
	l := c.l
	c.split.feed(b)
	answered := 0
	// The latencies of the echoes: lat is class "data" ("control" on a
	// control connection), raw is "data-uncorrected" of a steady source (a
	// hot source's are the same values as lat: it has no schedule).
	lat, raw := l.scratch[0][:0], l.scratch[1][:0]
	for {
		f, ok, err := c.split.next()
		if err != nil {
			c.flushLatencies(lat, raw, now)
			c.streamBroken(err)
			return
		}
		if !ok {
			break
		}
		s, how := c.settle(f)
		if s == nil {
			continue
		}
		answered++
		if how != settledEcho {
			continue
		}
		switch c.kind {
		case kindHot:
			lat = append(lat, now-s.actual)
		case kindSteady:
			lat = append(lat, now-s.stamp)
			raw = append(raw, now-s.actual)
		case kindControl:
			lat = append(lat, now-s.stamp)
		}
	}
	c.flushLatencies(lat, raw, now)
	if c.state == stDead {
		return
	}
	if answered > 0 {
		if c.service != nil && c.serviceFrom >= 0 {
			c.service.Record(time.Duration(now - c.serviceFrom))
		}
		c.serviceFrom = -1
		if c.sentOutstanding() > 0 {
			c.serviceFrom = now
		}
		if c.state == stOpen && !c.busy() {
			c.resume()
		}
	}
}

// flushLatencies records the latencies onAnswers gathered from answers
// received at now (see there).
func (c *conn) flushLatencies(lat, raw []int64, now int64) {
	l := c.l
	if len(lat) > 0 {
		switch c.kind {
		case kindHot:
			if now >= l.measureFrom && now < l.sendEnd {
				c.measuredEchoed += uint64(len(lat))
			}
			l.cData.RecordBatch(lat)
			l.cRaw.RecordBatch(lat)
		case kindSteady:
			l.cData.RecordBatch(lat)
			l.cRaw.RecordBatch(raw)
		case kindControl:
			l.cControl.RecordBatch(lat)
		}
	}
	l.scratch[0], l.scratch[1] = lat, raw
}

type settleHow uint8

const (
	settledEcho settleHow = iota + 1
	settledReject
	settledCorrupt
)

// settle handles one received frame (as splitter.next returns it) and
// returns the slot it settled (nil if it settled none: a duplicate, a
// stranger, a STOP answer). An echo is checked field by field where it
// lies; the rare cases decode the whole header.
func (c *conn) settle(f []byte) (*slot, settleHow) {
	l := c.l
	kind, token, seq := wire.Kind(f[4]), binary.LittleEndian.Uint64(f[8:]), binary.LittleEndian.Uint64(f[16:])
	switch {
	case kind == c.frameKind:
		if token != c.token {
			c.foreign(frameHeader(f))
			return nil, 0
		}
		s := c.lookup(kind, seq)
		if s == nil {
			return nil, 0
		}
		if binary.LittleEndian.Uint32(f) != uint32(c.frameSize-4) || f[5] != 0 || // length, flags
			int64(binary.LittleEndian.Uint64(f[24:])) != s.stamp || digest(f[wire.HeaderSize:]) != s.digest {
			c.corruptAnswer(frameHeader(f), f[wire.HeaderSize:], s)
			c.close(s)
			return s, settledCorrupt
		}
		c.acct.Echoed++
		c.close(s)
		return s, settledEcho
	case kind == wire.KindReject:
		if token == 0 && l.overSize && c.kind != kindControl {
			// The refusal of the over-size fault's header (token 0, never
			// ours; a reference reactor answers with a zero header, since
			// it refuses the frame before reading its fields).
			c.overSizeRejected++
			return nil, 0
		}
		if token != c.token {
			c.foreign(frameHeader(f))
			return nil, 0
		}
		s := c.lookup(kind, seq)
		if s == nil {
			return nil, 0
		}
		c.acct.Rejected++
		c.close(s)
		return s, settledReject
	case c == l.stopConn && (kind == wire.KindStopAck || kind == wire.KindStop) && token == c.token && seq == stopSeq:
		l.onStopAnswer(frameHeader(f), f[wire.HeaderSize:], l.now)
		return nil, 0
	}
	h := frameHeader(f)
	c.acct.Unexpected++
	c.addEvidence("unexpected %v frame (token %#x, seq %d, %d payload bytes) on a %v connection", h.Kind, h.Token, h.Seq, h.PayloadLen(), c.frameKind)
	return nil, 0
}

// lookup returns the live, sent slot an answer with c's token is for, or
// nil after counting the answer as duplicated or unexpected.
func (c *conn) lookup(kind wire.Kind, seq uint64) *slot {
	if seq >= c.nextSeq {
		c.acct.Unexpected++
		c.addEvidence("%v answer for seq %d, never sent on this connection (next seq %d)", kind, seq, c.nextSeq)
		return nil
	}
	s := &c.ring[seq&c.mask]
	if c.nextSeq-seq > uint64(len(c.ring)) || s.seq != seq || s.state == slotDone || s.state == slotFree {
		// The slot was reused or settled: the frame was answered already.
		c.acct.Duplicated++
		c.addEvidence("second %v answer for seq %d", kind, seq)
		return nil
	}
	if s.state == slotBuilt {
		c.acct.Unexpected++
		c.addEvidence("%v answer for seq %d before it was written in full", kind, seq)
		return nil
	}
	return s
}

// close settles s.
func (c *conn) close(s *slot) {
	s.state = slotDone
	c.live--
	for c.lowSeq < c.nextSeq && c.ring[c.lowSeq&c.mask].state == slotDone {
		c.lowSeq++
	}
}

func (c *conn) corruptAnswer(h wire.Header, p []byte, s *slot) {
	c.acct.CorruptedAnswers++
	switch {
	case h.Length != uint32(c.frameSize-4):
		c.addEvidence("seq %d answered with length %d, sent %d", h.Seq, h.Length, c.frameSize-4)
	case h.Flags != 0:
		c.addEvidence("seq %d answered with flags %#x, sent 0", h.Seq, h.Flags)
	case int64(h.SendNs) != s.stamp:
		c.addEvidence("seq %d answered with send ns %d, sent %d", h.Seq, h.SendNs, s.stamp)
	default:
		want := make([]byte, len(p))
		wire.FillPattern(want, c.token, h.Seq)
		at := 0
		for at < len(p) && p[at] == want[at] {
			at++
		}
		c.addEvidence("seq %d payload differs from the pattern at byte %d", h.Seq, at)
	}
}

// foreign handles a frame carrying a token other than the connection's.
func (c *conn) foreign(h wire.Header) {
	if o := c.l.owner(h.Token); o != nil {
		c.acct.WrongConn++
		whose := o.name
		if o == c {
			whose = c.name + "'s earlier connection"
		}
		c.addEvidence("%v seq %d of %s (token %#x) delivered on %s (token %#x)", h.Kind, h.Seq, whose, h.Token, c.name, c.token)
		return
	}
	c.acct.Unexpected++
	c.addEvidence("%v seq %d with token %#x, not one of ours", h.Kind, h.Seq, h.Token)
}

var errEOF = errors.New("EOF")

// peerEnded handles the end of the connection from the target's side.
func (c *conn) peerEnded(err error) {
	if c.state == stClosing {
		c.endClosing("")
		return
	}
	c.targetClosed(err)
}

// targetClosed ends a connection the target closed (or that failed): what
// it had outstanding is lost, unless the target acknowledged our STOP (by
// the end of the run, if the close comes first).
func (c *conn) targetClosed(err error) {
	switch {
	case c.l.stopAcked:
		c.die("closed by the target after STOP_ACK: "+err.Error(), &c.acct.Unanswered)
		return
	case c.l.stopSent:
		c.die("closed by the target after STOP was sent: "+err.Error(), &c.pendingStop)
		return
	}
	if c.l.phase == phaseDraining && c.sentOutstanding() == 0 {
		c.die("closed by the target after sending ended: "+err.Error(), &c.acct.Lost)
		return
	}
	if n := c.sentOutstanding(); n > 0 {
		c.addEvidence("the target closed the connection (%v) with %d frames unanswered", err, n)
	}
	c.die("closed by the target: "+err.Error(), &c.acct.Lost)
}

// streamBroken handles an answer stream the decoder refuses.
func (c *conn) streamBroken(err error) {
	if c.state == stClosing && c.closing == closingOverSize {
		c.endClosing("") // a byte echo sent the over-size header back
		return
	}
	c.acct.Unexpected++
	c.addEvidence("answer stream broken: %v", err)
	c.die("answer stream broken: "+err.Error(), &c.acct.Lost)
}

// die ends the source for good; its sent, unsettled frames count in into.
// A source that dies while the run is sending shortens the run: that makes
// it invalid (result), unless the target acknowledged our STOP and the
// connection ended after STOP was sent. (A wire fault of ours never gets
// here: it closes and reconnects, see faultClose and endClosing.)
func (c *conn) die(why string, into *uint64) {
	c.settleSent(into, "")
	c.rewindUnsent()
	c.closeFd(false)
	if c.state != stDead {
		c.endedAt = c.l.now
		c.endedSending = c.l.phase == phaseSending
		c.endedAfterStop = c.l.stopSent
	}
	c.state = stDead
	if c.ended == "" {
		c.ended = why
	}
}

// faultClose closes the connection as a fault's plan says; what it had
// outstanding is abandoned, what was not yet written goes back to the
// queue, and the source reconnects.
func (c *conn) faultClose(reset bool) {
	c.settleSent(&c.acct.Abandoned, "")
	c.rewindUnsent()
	c.closeFd(reset)
	c.state = stClosed
	c.reconnectAt = c.l.now
	if c.l.phase == phaseSending {
		c.reconnect()
	}
}

// beginClosing waits for the target to close after a half-close or an
// over-size header.
func (c *conn) beginClosing(cause closingCause) {
	c.state = stClosing
	c.closing = cause
	c.closingDeadline = c.l.now + int64(closingWait)
}

// endClosing ends a closing connection (the target closed it, or why says
// why not) and reconnects.
func (c *conn) endClosing(why string) {
	if why != "" {
		c.addEvidence("%s", why)
	}
	switch {
	case c.closing == closingOverSize || c.l.stopAcked:
		c.settleSent(&c.acct.Abandoned, "")
	case c.l.stopSent:
		c.settleSent(&c.pendingStop, "")
	default: // half-close: the target owed an answer to everything before the FIN
		c.settleSent(&c.acct.Lost, "unanswered when the target closed after our half-close")
	}
	c.rewindUnsent()
	c.closeFd(false)
	c.state = stClosed
	c.reconnectAt = c.l.now
	if c.l.phase == phaseSending {
		c.reconnect()
	} else {
		c.state = stDead
	}
}

// settleSent settles every sent, unsettled frame, counting it in into; a
// non-empty why is evidence worth keeping.
func (c *conn) settleSent(into *uint64, why string) {
	n := 0
	for seq := c.lowSeq; seq < c.sentSeq; seq++ {
		s := &c.ring[seq&c.mask]
		if s.state == slotSent {
			if n == 0 && why != "" {
				c.addEvidence("seq %d and later: %s", seq, why)
			}
			s.state = slotDone
			c.live--
			*into++
			n++
		}
	}
	for c.lowSeq < c.nextSeq && c.ring[c.lowSeq&c.mask].state == slotDone {
		c.lowSeq++
	}
}

// rewindUnsent forgets the frames built but not written in full: they will
// be built again (same seq, new token) on the next connection.
func (c *conn) rewindUnsent() {
	for seq := c.sentSeq; seq < c.nextSeq; seq++ {
		c.ring[seq&c.mask].state = slotFree
		c.live--
	}
	c.nextSeq = c.sentSeq
	c.lowSeq = min(c.lowSeq, c.nextSeq)
	c.out, c.outOff = c.out[:0], 0
	c.plan, c.planPos, c.stepOff, c.planWait = nil, 0, 0, 0
}

// closeFd closes the current connection, if open.
func (c *conn) closeFd(reset bool) {
	if c.fd < 0 {
		return
	}
	if reset {
		closeReset(c.fd)
	} else {
		unix.Close(c.fd) // closing removes it from the epoll set
	}
	c.fd = -1
	c.inEpoll, c.interest = false, 0
}
