//go:build linux

package loadgen

// Run, and the loop's state and its construction.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/internal/epollsys"
	"github.com/reactorlab/reactorlab/internal/uring"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/wire"
)

// never is a deadline that does not come.
const never = math.MaxInt64

// The Refs in the epoll events of the loop's own fds: generation 0, which no
// connection's Ref carries (see conn.ref), and slots no connection has.
const (
	refTimer slots.Ref = math.MaxUint32 << 32       // slot 2^32-1
	refWake  slots.Ref = (math.MaxUint32 - 1) << 32 // slot 2^32-2
)

// stopSeq is the seq of the STOP frame; OverSizeSeq (MaxUint64) is taken.
const stopSeq = math.MaxUint64 - 1

// readBufSize is the size of the loop's read buffer (one read per readable
// connection per round).
const readBufSize = 128 << 10

// closingWait bounds how long a connection waits for the target to close it
// after a half-close or an over-size header.
const closingWait = time.Second

type phase uint8

const (
	phaseConnecting phase = iota
	phaseSending
	phaseDraining
	phaseDone
)

// Run drives the target described by cfg and returns what it measured. It
// validates cfg (the error wraps ErrConfig), connects every source (bounded
// by ConnectTimeout; a failure is an error naming the source), sends for
// Warmup + Duration, waits up to Drain for outstanding answers, and returns.
// Cancelling ctx ends it early: the Result then has Interrupted set and
// holds what was measured, and the frames outstanding are counted as
// unanswered, not lost.
//
// Run runs Config.Loops event loops, each on a goroutine locked to its own
// OS thread (pinned to its CPU of Config.LoopCPUs, if any), and waits for
// them: the loops connect their sources in parallel and start sending at
// one instant, so their schedules and intervals line up. Every goroutine
// it starts (the loops, progress reports, the cancellation hook) has ended
// when it returns, and every descriptor it opened is closed; a loop's
// thread is discarded, never returned to the runtime with its mask.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fs, err := cfg.wireFaults()
	if err != nil {
		return nil, err
	}
	dataSA, err := resolve(cfg.DataAddr)
	if err != nil {
		return nil, err
	}
	ctlSA, err := resolve(cfg.ControlAddr)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loadgen: not started: %w", err)
	}

	g, err := newGroup(cfg, fs, dataSA, ctlSA)
	if err != nil {
		return nil, err
	}
	defer g.closeAll()

	// Cancellation wakes every loop through its eventfd. The hook must be
	// gone before the eventfds are closed (deferred above, so run after
	// this).
	fired := make(chan struct{})
	stopHook := context.AfterFunc(ctx, func() {
		g.interrupted.Store(true)
		g.wakeAll(nil)
		close(fired)
	})
	defer func() {
		if !stopHook() {
			<-fired
		}
	}()

	if cfg.Progress != nil {
		reports := make(chan Progress, 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			for p := range reports {
				cfg.Progress(p)
			}
		})
		merged := newProgressMerger(len(g.loops), reports)
		for _, l := range g.loops {
			l.progress = merged.in
		}
		go merged.run() // ended by merged.close, deferred below
		defer wg.Wait()
		defer close(reports)
		defer merged.close()
	}
	if err := g.run(ctx); err != nil {
		return nil, err
	}
	return g.result()
}

// loop is the generator: every connection, the schedule and the recorder.
// It is used by one goroutine, locked to its thread.
type loop struct {
	cfg       Config
	faults    []faults.WireFault
	overSize  bool // an over-size fault is configured: a plan ends its connection
	epfd      int
	tfd, efd  int // timerfd (schedule), eventfd (cancellation)
	evs       []unix.EpollEvent
	conns     []*conn // the sources being served: every one, or during a hot lead's first part the hot ones
	all       []*conn // every source of the loop, hot ones first (conns is a prefix of it)
	nHot      int     // hot sources among all
	stopConn  *conn
	churn     *churner // nil without Config.ChurnRate
	prefix    uint64   // high 32 bits of every token of this run
	tokens    []*conn  // token serial (low 32 bits) → its source; [0] unused
	readBuf   []byte
	scratch   [3][]int64 // latency batches: data (or control), data-uncorrected, send-lag
	startWall time.Time

	rec                                *record.Recorder
	cData, cRaw, cControl, cStop, cLag *record.Class
	cSteady                            *record.Class // ClassSteady: nil unless hot and steady sources share the run
	cUrgent                            *record.Class // nil without Config.UrgentEvery
	// The self-check's gates' samples (gates.go), from beginSchedule: the
	// steady sources' sends (Value: the conn's idx) of frames intended in
	// the measured time, and the latencies (ns) of answers read in it, by
	// source kind.
	sentLog                        *record.SampleLog
	steadyLog, hotLog, ctrlLog     *record.SampleLog
	t0                             int64 // nanotime at the start of sending
	now                            int64 // ns since t0
	schedStart                     int64 // start of the measured schedule (0 without a hot lead)
	leading                        bool  // in the hot lead (before schedStart)
	phase                          phase
	measureFrom, sendEnd, drainEnd int64
	sendStopped                    int64 // when sending ended (<= sendEnd)
	nextInterval                   int64 // next interval boundary (recorder, progress)
	armed                          int64 // deadline armed on the timerfd, or never
	interrupted                    bool
	connectDeadline                int64
	cpu0, cpu1                     int64 // loop thread CPU at start and end
	ru0, ru1                       unix.Rusage
	wall                           int64               // ns from start of sending to the end
	progress                       chan<- loopProgress // nil: no reports
	lastEchoed                     uint64
	lastReport                     int64 // l.now at the last progress report
	lastYield                      int64
	pollFirst                      bool // the last wait found events without sleeping

	grain    int64 // steady deadlines are rounded up to multiples of it (0: exact)
	stopDue  int64 // STOP probe time (never: none)
	stopSent bool
	// stopAcked: STOP_ACK arrived. Only then has the target stopped by our
	// STOP: frames it never answered are unanswered, not lost, and a
	// connection it closed was closed by the STOP. A STOP merely sent
	// (echoed by a byte echo, or never answered) excuses nothing.
	stopAcked  bool
	stopSentAt int64
	stop       *StopOutcome
	precision  *PrecisionOutcome // with Config.Precision, from beginSchedule
	invalid    []string

	g         *group // the run's loops, this one among them
	index     int    // this loop's number in g.loops
	positions []int  // conns[i]'s position in the run's list hot, steady, control
	tid       int    // the loop's thread (set when it starts)
	cpu       int    // the CPU its thread is pinned to, -1 for none

	// ur is the uring engine's ring and queues (nil on the epoll engine);
	// waker, once set (at the start of sending), is how the group wakes a
	// loop of the uring engine instead of through efd.
	ur    *uringIO
	waker atomic.Pointer[uring.Waker]
}

// newLoop returns a loop with every source of cfg, alone in a group of
// its own: the one loop of a run (newGroup makes the others).
func newLoop(cfg Config, fs []faults.WireFault, dataSA, ctlSA unix.Sockaddr) (*loop, error) {
	g := &group{cfg: cfg, joined: make(chan error, 1)}
	l, err := newLoopShare(g, 0, 1, fs, dataSA, ctlSA, uint32(rand.Uint32()))
	if err != nil {
		return nil, err
	}
	g.loops = []*loop{l}
	if l.stopConn != nil {
		g.stopLoop = l
	}
	return l, nil
}

// newLoopShare returns loop index of n: its own epoll set, timerfd and
// eventfd, and the sources at the positions p (in the run's list hot,
// steady, control) with p mod n == index, each built as in a run of one
// loop (its name, schedule and urgent turn by its position). Its tokens
// carry prefix (made odd), which must differ from every other loop's.
func newLoopShare(g *group, index, n int, fs []faults.WireFault, dataSA, ctlSA unix.Sockaddr, prefix uint32) (l *loop, err error) {
	cfg := g.cfg
	l = &loop{cfg: cfg, faults: fs, epfd: -1, tfd: -1, efd: -1, armed: never, stopDue: never,
		readBuf: make([]byte, readBufSize), g: g, index: index, cpu: -1}
	for _, f := range fs {
		if _, ok := f.(faults.OverSize); ok {
			l.overSize = true
		}
	}
	defer func() {
		if err != nil {
			l.closeAll()
		}
	}()
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if l.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	if l.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	// The timerfd is edge-triggered and never read: every expiry is an edge,
	// and re-arming it resets its count, so reading it would only cost a
	// syscall per wake.
	for _, r := range []struct {
		fd  int
		ref slots.Ref
		ev  uint32
	}{{l.tfd, refTimer, unix.EPOLLIN | unix.EPOLLET}, {l.efd, refWake, unix.EPOLLIN}} {
		if err := epollsys.Ctl(l.epfd, unix.EPOLL_CTL_ADD, r.fd, r.ev, r.ref); err != nil {
			return nil, os.NewSyscallError("epoll_ctl add", err)
		}
	}
	l.prefix = uint64(prefix|1) << 32
	l.tokens = []*conn{nil}
	frame := wire.HeaderSize + cfg.Payload
	pos := 0
	mine := func() bool { p := pos; pos++; return p%n == index }
	for i := range cfg.Hot {
		if mine() {
			l.addConn(kindHot, i, pos-1, dataSA, wire.KindData, frame, cfg.InFlight, ringFor(2*cfg.InFlight))
			l.nHot++
		}
	}
	for i := range cfg.Steady {
		if mine() {
			l.addConn(kindSteady, i, pos-1, dataSA, wire.KindData, frame, cfg.Window, ringFor(cfg.Window))
		}
	}
	for i := range cfg.Control {
		if mine() {
			l.addConn(kindControl, i, pos-1, ctlSA, wire.KindPing, wire.HeaderSize, 1, 4)
			if i == 0 && cfg.StopAt > 0 {
				l.stopConn = l.conns[len(l.conns)-1] // STOP goes on the first control connection
			}
		}
	}
	l.all = l.conns
	if cfg.HotLead > 0 {
		l.conns = l.all[:l.nHot] // the others connect after the lead (lead)
	}
	if cfg.ChurnRate > 0 {
		l.churn = newChurner(l, index, n, dataSA)
	}
	l.evs = make([]unix.EpollEvent, min(max(len(l.all)+2+cfg.ChurnMax/max(n, 1), 16), 1024))
	return l, nil
}

// ringFor returns the ring size for at most n outstanding frames: a power of
// two >= n, at least 64.
func ringFor(n int) int {
	size := 64
	for size < n {
		size <<= 1
	}
	return size
}

// addConn adds source i of kind, at position pos of the run's list.
func (l *loop) addConn(kind connKind, i, pos int, sa unix.Sockaddr, fk wire.Kind, frame, limit, ring int) {
	c := &conn{l: l, idx: len(l.conns), kind: kind, name: fmt.Sprintf("%s-%d", kind, i), sa: sa, fd: -1,
		frameKind: fk, frameSize: frame, limit: limit, ring: make([]slot, ring), mask: uint64(ring - 1),
		split: splitter{max: max(frame, 64<<10)}, blockedSince: -1, serviceFrom: -1, endSeq: math.MaxUint64}
	if kind != kindControl && l.cfg.UrgentEvery > 0 {
		c.urgent = newUrgentSource(l.cfg.UrgentEvery, pos, l.cfg.Hot+l.cfg.Steady) // data connections come first
	}
	switch kind {
	case kindSteady:
		c.period = 1e9 * float64(l.cfg.Steady) / l.cfg.Rate
		c.phase = int64(c.period * float64(i) / float64(l.cfg.Steady))
		if l.cfg.Arrivals == ArrivalsPoisson {
			c.drawn = newDrawnTimes(l.cfg.ArrivalSeed, uint64(i), c.period)
			c.drawn.bunch = l.cfg.arrivalBunch
		} else if l.cfg.arrivalBunch > 1 {
			c.bunch = uint64(l.cfg.arrivalBunch)
		}
	case kindControl:
		c.period = float64(l.cfg.ControlEvery)
		c.phase = int64(c.period * float64(i) / float64(l.cfg.Control))
		c.health = newHealthChecker(l.cfg.ControlTimeout, l.cfg.RemovalAfter)
		if l.cfg.ControlEvery == 0 {
			c.endSeq = 0 // a connection for STOP only
		}
	}
	l.conns = append(l.conns, c)
	l.positions = append(l.positions, pos)
}

// newToken returns a token never used before in this run, for c; with
// several loops the group learns it too (owner).
func (l *loop) newToken(c *conn) uint64 {
	l.tokens = append(l.tokens, c)
	token := l.prefix | uint64(len(l.tokens)-1)
	if len(l.g.loops) > 1 {
		l.g.addToken(token, c)
	}
	return token
}

// owner returns the source that used token (on this loop or another), or
// nil if it is not one of ours. Only the source's name and identity may be
// used: another loop's source belongs to that loop's goroutine.
func (l *loop) owner(token uint64) *conn {
	if token&^0xffffffff != l.prefix {
		return l.g.owner(token)
	}
	if s := token & 0xffffffff; s > 0 && s < uint64(len(l.tokens)) {
		return l.tokens[s]
	}
	return nil
}

func (l *loop) closeAll() {
	if l.ur != nil && l.ur.waker != nil {
		l.ur.waker.Close() // after the loops ended: no one writes it any more
		l.ur.waker = nil
	}
	for _, c := range l.all {
		if c.fd >= 0 {
			unix.Close(c.fd)
			c.fd = -1
		}
	}
	if l.churn != nil {
		l.churn.closeAll()
	}
	for _, fd := range []*int{&l.epfd, &l.tfd, &l.efd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
