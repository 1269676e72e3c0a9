//go:build linux

package reactors

import (
	"fmt"
	"sync/atomic"

	"github.com/reactorlab/reactorlab/reactors/outq"
	"github.com/reactorlab/reactorlab/reactors/slots"
)

// sourceKind says what a registered descriptor is.
type sourceKind uint8

const (
	kindConn sourceKind = iota + 1
	kindListener
	kindIngress
	kindTimer
	kindStop
)

// sourceState is where a connection stands; it changes only through
// Loop.setState, which refuses a transition not listed here (a bug: the
// reactor fails with it). Descriptors that are not connections stay
// stateReading.
//
//	reading  → paused    the out-queue rose above its high watermark
//	                     (EPOLLIN removed: backpressure reaches the peer)
//	paused   → reading   the out-queue drained to its low watermark
//	reading  → poolWait  a DATA frame found the worker pool full (EPOLLIN
//	                     removed, the frame kept); retried every round
//	poolWait → reading   retried, with the out-queue under its watermark
//	poolWait → paused    retried, with the out-queue above it (worker
//	                     results grew it meanwhile)
//	reading  → held      shared layout: it carried the STOP; unarmed until
//	                     STOP_ACK is queued on it
//	held     → reading   STOP_ACK queued (or paused, by the out-queue)
//	held     → paused
//	reading  → closing   EOF read: it reads no more and closes once its
//	                     out-queue and offloaded callbacks are done
//	any      → closed    fd closed, slot freed, identity revoked
//
// Ready-queued is not a state but membership of a ready queue: only a
// reading source is (re)queued, and a queued source that leaves reading
// finds nothing to do when its turn comes. Whatever the state, EPOLLOUT is
// registered exactly while the out-queue is non-empty.
type sourceState uint8

const (
	stateReading sourceState = iota
	statePaused
	statePoolWait
	stateHeld
	stateClosing
	stateClosed
)

var stateNames = [...]string{"reading", "paused", "pool-wait", "held", "closing", "closed"}

func (st sourceState) String() string {
	if int(st) < len(stateNames) {
		return stateNames[st]
	}
	return fmt.Sprintf("state(%d)", uint8(st))
}

// legalNext[from] has bit to set when from → to is a transition above.
var legalNext = [...]uint8{
	stateReading:  1<<statePaused | 1<<statePoolWait | 1<<stateHeld | 1<<stateClosing | 1<<stateClosed,
	statePaused:   1<<stateReading | 1<<stateClosed,
	statePoolWait: 1<<stateReading | 1<<statePaused | 1<<stateClosed,
	stateHeld:     1<<stateReading | 1<<statePaused | 1<<stateClosed,
	stateClosing:  1 << stateClosed,
	stateClosed:   0,
}

// setState moves s to state to, failing the reactor on a transition the
// table above does not list.
func (l *Loop) setState(s *Source, to sourceState) {
	if legalNext[s.state]&(1<<to) == 0 {
		l.r.fail(fmt.Errorf("reactor bug: source %v: state %v → %v is not a transition", s.ref, s.state, to))
	}
	s.state = to
}

// Source is one registered descriptor: a connection, a listener, or one of
// the loop's own (ingress eventfd, timerfd, stop eventfd). A design's hooks
// see it through Ref, Control and Held, on the thread of the loop that
// holds it.
type Source struct {
	fd       int
	ref      slots.Ref
	kind     sourceKind
	state    sourceState
	control  bool
	loop     *Loop // owning loop; shared layout: the loop that accepted it (stats only)
	interest uint32

	// Marks, not states: bookkeeping the loop keeps beside the state.
	touchedMark bool // in Loop.touched: given worker results this drain, to be flushed once
	rdhup       bool // EPOLLRDHUP seen: a FIN is queued, so read until 0 even after a short read
	hadOut      bool // counted in Reactor.outPending (its out-queue is non-empty)
	borrowed    bool // a listener that is the reactor's, in every loop's set (ListenerInEverySet): never closed by the loop
	twinned     bool // the ServeOnTwoLoops mutant: another loop holds a duplicate of fd in its set

	// An urgent byte read and not yet answered: urgentPastMark until the
	// in-band reads have reached its mark, then urgentPending until the
	// socket takes the answer (urgent data on; urgent_linux.go).
	shutWr bool // drain stop: shut for writing, read only to discard until the client's EOF
	// discardQueued: s is in its loop's discardMore (drain stop).
	discardQueued bool

	// The completion path (ring_linux.go): recvArmed, a multishot receive
	// (a listener: its accept) is in flight; recvCancelled, its cancel was
	// submitted; sending, a send of sendBuf is; ringOps counts the
	// operations in flight; starved, its receive ended with ENOBUFS and
	// waits its turn in its loop's starved queue (rearmStarved), never
	// armed meanwhile; eofPending, the receive reported the
	// peer's end of stream, acted on once the bytes before it are served;
	// acceptPaused, a listener's accept waits for the accept-pause timer;
	// ringFd, a closed connection's descriptor, kept until ringOps is 0;
	// received, it is in its loop's received list (serveReceived).
	recvArmed, recvCancelled, sending, starved, eofPending, acceptPaused, received bool
	ringOps                                                                        int
	ringFd                                                                         int
	sendBuf                                                                        []byte

	urgentPastMark bool
	urgentPending  bool
	urgentByte     byte

	in    []byte
	r     int // parse offset in in
	out   outq.Queue
	tasks int // offloaded callbacks outstanding
	// acceptedAt is when an acceptor accepted a handed-over connection,
	// until its first read (then 0): the handoff-to-first-read histogram.
	acceptedAt int64
	since      int64 // when it last became ready (rotation interval)

	// owned is the one-shot ownership word: 0 armed (or being built), 1
	// owned by the loop whose epoll_wait returned it. The kernel already
	// makes the hand-off exclusive; the atomic makes it a happens-before
	// edge in Go's memory model (and visible to the race detector), and a
	// failed acquire would expose a second owner.
	owned atomic.Uint32
}

// getBuf lends s a read buffer from the loop's free list: idle connections
// hold none, so their footprint is the source struct and the kernel socket.
func (l *Loop) getBuf(s *Source) {
	if n := len(l.bufs); n > 0 {
		s.in = l.bufs[n-1][:0]
		l.bufs = l.bufs[:n-1]
	} else {
		s.in = make([]byte, 0, l.bufSize)
	}
	s.r = 0
}

// putBuf takes back s's buffer if it holds no unparsed bytes.
func (l *Loop) putBuf(s *Source) {
	if s.r != len(s.in) {
		return
	}
	if (cap(s.in) == l.bufSize || l.completion && cap(s.in) > l.bufSize && cap(s.in) <= maxLentIn) && len(l.bufs) < 64 {
		l.bufs = append(l.bufs, s.in[:0])
	}
	s.in, s.r = nil, 0
}

// lendOut gives s an out-queue buffer from the loop's free list if it has
// none, before something is queued on it.
func (l *Loop) lendOut(s *Source) {
	if n := len(l.outBufs); n > 0 && s.out.Attach(l.outBufs[n-1]) {
		l.outBufs = l.outBufs[:n-1]
	}
}

// takeOut takes back the buffer of s's out-queue once it has drained
// (saving 512 bytes or more per idle connection: an echoed connection
// otherwise keeps the buffer it grew). Buffers over maxLentOut are left to
// the collector, so one burst does not pin its memory in the pool.
func (l *Loop) takeOut(s *Source) {
	if b := s.out.Detach(); b != nil && (cap(b) <= maxLentOut || l.completion && cap(b) <= maxLentIn) && len(l.outBufs) < 64 {
		l.outBufs = append(l.outBufs, b)
	}
}

// maxLentOut is the largest out-queue buffer the loop keeps for lending.
const maxLentOut = 64 << 10

// maxLentIn is the largest input or out-queue buffer a completion loop
// keeps for lending: there a burst of completions brings input past a
// turn's budget, and a send in flight lets the out-queue grow meanwhile,
// so buffers grow past their first size in steady state.
const maxLentIn = 512 << 10

// growIn makes room for a frame of size bytes (already checked against the
// frame limit, or trusted by the NoFrameLimit mutant).
func (l *Loop) growIn(s *Source, size int) {
	buf := make([]byte, len(s.in)-s.r, max(size, l.bufSize))
	copy(buf, s.in[s.r:])
	s.in, s.r = buf, 0
}
