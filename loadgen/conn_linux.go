//go:build linux

package loadgen

// A source (conn): its kinds and states, its physical connection's life
// (connect, epoll interest, events, deadlines, reconnection).

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/internal/epollsys"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/results/record"
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
// that span may be, so a live frame is never overwritten. appendFrame sets
// every field, one by one: a field added here must be set there too.
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
	gen       uint32 // bumped per physical connection, never 0; with idx, the slots.Ref of its epoll events (see ref)
	state     connState
	started   bool   // it has begun sending (begin): before, a failed connect ends it, and nothing is sent
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

	schedule        // steady, control: the frames' timetable
	endSeq   uint64 // first seq intended at or after the end of sending

	blockedSince int64 // -1: not blocked
	blockedWhy   blockCause
	unblockedAt  int64
	blocked      [numBlockCauses]int64

	service     *record.Class
	serviceFrom int64 // -1: nothing outstanding

	health healthChecker // control: the health check's verdicts on its measured answers
	urgent *urgentSource // data, with Config.UrgentEvery: its urgent bytes; nil otherwise

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
	// The uring engine's state of the connection (uringIO): a multishot
	// recv armed, a send in flight (c.out[c.outOff:] must then stay as it
	// is), and a place in the round's arm and send queues.
	urRecvArmed, urSending    bool
	urArmQueued, urSendQueued bool

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

// ref names c's current physical connection in its epoll events: slot idx
// (the index in loop.conns), generation gen. An event whose Ref is not c's
// current one is of a connection since closed (see loop.wait).
func (c *conn) ref() slots.Ref { return slots.MakeRef(uint32(c.idx), c.gen) }

// connect opens a new physical connection with a new token.
func (c *conn) connect() error {
	fd, connected, err := dial(c.sa)
	if err != nil {
		return err
	}
	c.fd = fd
	c.gen = max(c.gen+1, 1) // generation 0 is never issued (slots.Ref)
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
// reconnections), and EPOLLPRI (urgent data) for a source of the urgent
// class.
func (c *conn) readInterest() uint32 {
	var ev uint32
	if !c.readPaused {
		ev = unix.EPOLLIN
	}
	if c.urgent != nil {
		ev |= unix.EPOLLPRI
	}
	return ev
}

// setInterest registers (or changes) the epoll events of c's fd.
func (c *conn) setInterest(events uint32) error {
	if c.l.ur != nil && c.l.ur.active {
		return nil // the ring does the I/O: no readiness is asked for
	}
	if c.inEpoll && c.interest == events {
		return nil
	}
	op := unix.EPOLL_CTL_MOD
	if !c.inEpoll {
		op = unix.EPOLL_CTL_ADD
	}
	if err := epollsys.Ctl(c.l.epfd, op, c.fd, events, c.ref()); err != nil {
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
	if c.urgent != nil {
		w = min(w, c.urgentDeadline())
	}
	return min(w, c.scheduleDeadline())
}

// scheduleDeadline is when the next frame of a steady or control source is
// due (rounded up to the send grain), or never. It is due even when the
// source cannot send it (window full, socket full, a fault's pause), so that
// the wait is noticed when it begins; once it is, events (answers, the
// socket turning writable, the fault's end) resume the source.
func (c *conn) scheduleDeadline() int64 {
	if c.kind == kindHot || !c.started || c.l.phase != phaseSending || c.nextSeq >= c.endSeq || c.blockedSince >= 0 {
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
	if c.urgent != nil {
		c.sendUrgentDue()
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
	if ev&unix.EPOLLPRI != 0 && c.urgent != nil {
		// Before the in-band read: one that starts at the urgent mark
		// discards an urgent byte not yet read (see "Urgent data").
		c.onUrgent(ev&unix.EPOLLIN != 0)
	}
	if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 && c.fd >= 0 && c.gen == gen {
		c.onReadable()
	}
	if c.urgent != nil && c.fd >= 0 && c.gen == gen {
		c.sendUrgentDue() // the next tick may have waited for this event's answer and read
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
	if c.l.phase == phaseSending && c.started {
		c.resume()
	}
}

func (c *conn) connectFailed(err error) {
	c.closeFd(false)
	if c.l.phase == phaseConnecting || !c.started { // its first connection: the run cannot start
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
	if c.urgentWaitsWrite() {
		c.urgent.waitWrite = false
		c.sendUrgentDue()
		if c.fd < 0 || c.state == stDead {
			return
		}
	}
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
