//go:build linux

package reactors

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/ingress"
	"github.com/reactorlab/reactorlab/reactors/outq"
	"github.com/reactorlab/reactorlab/reactors/readyq"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/reactors/timers"
)

// msgKind is what crosses a loop's ingress.
type msgKind uint8

const (
	msgWake   msgKind = iota + 1 // re-check the stop state
	msgResult                    // an offloaded callback finished
	msgAck                       // send STOP_ACK: every loop has quiesced
)

type message struct {
	kind msgKind
	ref  slots.Ref
	fd   int32
	buf  *[]byte // msgResult: the frame to echo, from the pool's buffers
}

// Timer kinds the loop schedules.
const (
	timerApp         uint16 = iota + 1 // recurring application timer (deviation probe)
	timerAcceptPause                   // EMFILE fallback: resume accepting
)

// loop is one owner loop on one locked OS thread. Everything in it is touched
// only by that thread, except pubMu-guarded published stats and the ingress.
type loop struct {
	r      *Reactor
	id     int
	design Design
	cfg    *Config

	epfd     int
	ownsEpfd bool // oneshot: only loop 0 owns the shared epoll fd and table
	table    *slots.Table[source]
	ready    *readyq.Queue // sources with work left after a turn
	ctlReady *readyq.Queue // prio: control sources with work left
	ingress  *ingress.Queue[message]
	timers   *timers.Set
	timersMu *sync.Mutex // oneshot: the timer set is shared by the workers
	timerRef slots.Ref   // the timerfd's source (oneshot rearms it)
	sampler  *cost.Sampler

	// bucketEnd is when prio's data bucket of this round must end (0
	// outside it): source turns check it where they read the clock, every
	// ClockEvery frames, so one source's long turn cannot carry the bucket
	// past its budget.
	bucketEnd int64

	evs       []unix.EpollEvent
	bufs      [][]byte // free read buffers (bufSize each)
	outBufs   [][]byte // free out-queue buffers, lent to a connection while it has bytes to send
	bufSize   int
	fdIndex   []slots.Ref // fd number → current source (used by the FdIdentity mutant)
	blocked   []slots.Ref // sources waiting for room in the worker pool
	listeners []slots.Ref

	ingressPending bool
	stopSeen       bool
	quiesced       bool
	tasks          int // offloaded callbacks not yet returned
	rearmTurns     int // oneshot: turns since start, for the missed-rearm mutant
	progress       uint64
	lastYield      int64 // nanotime of the last yieldToScheduler that yielded
	wokeAt         int64 // nanotime when the round's epoll_wait returned
	lastBatch      int   // events the last epoll_wait returned (WaitPollFirst's hint)
	now            int64 // round start, for timer callbacks

	onMessageFn func(message) // bound once: a method value per call would allocate
	onTimerFn   func(timers.Timer)
	touched     []*source // sources given worker results this drain, to flush once
	taskBufs    []*[]byte // free buffers for offloaded frames

	stats  Counters
	ledger Ledger
	hist   *histograms

	tid       atomic.Int32 // the loop's OS thread, once running
	cpuAtExit atomic.Int64 // the thread's CPU time (ns) when the loop ended

	pubMu     sync.Mutex
	pub       Counters
	pubLedger Ledger
	lastPub   int64
}

// sourceKind says what a registered descriptor is.
type sourceKind uint8

const (
	kindConn sourceKind = iota + 1
	kindListener
	kindIngress
	kindTimer
	kindStop
)

// source is one registered descriptor. A connection's states: reading
// (EPOLLIN registered), ready-queued (work left after a turn: in ready),
// paused by backpressure (out-queue above its high watermark: EPOLLIN
// removed until it drains to the low one), closing (EOF seen, out-queue
// still draining). Identity is its Ref; its fd number is reused at once
// after close.
type source struct {
	fd          int
	ref         slots.Ref
	kind        sourceKind
	control     bool
	loop        *loop // owning loop; oneshot: the loop that accepted it (stats only)
	interest    uint32
	paused      bool // backpressure: not reading
	poolWait    bool // a frame waits for room in the worker pool: not reading
	touchedMark bool // in loop.touched
	stopHeld    bool // oneshot: carried a STOP; held unarmed until STOP_ACK is queued
	eof         bool // peer finished sending (read 0); close once the out-queue drains
	rdhup       bool // EPOLLRDHUP seen: a FIN is queued, so read until 0 even after a short read
	hadOut      bool // counted in Reactor.outPending
	in          []byte
	r           int // parse offset in in
	out         outq.Queue
	tasks       int   // offloaded callbacks outstanding
	since       int64 // when it last became ready (rotation interval)

	// owned is the ONESHOT ownership word: 0 armed (or being built), 1 owned
	// by the worker whose epoll_wait returned it. The kernel already makes
	// the hand-off exclusive; the atomic makes it a happens-before edge in
	// Go's memory model (and visible to the race detector), and a failed
	// acquire would expose a second owner.
	owned atomic.Uint32
}

func newLoop(r *Reactor, id int, shareWith *loop, table *slots.Table[source]) (*loop, error) {
	cfg := &r.cfg
	l := &loop{r: r, id: id, design: r.design, cfg: cfg, epfd: -1,
		evs: make([]unix.EpollEvent, cfg.MaxEvents), bufSize: max(cfg.Budgets.Bytes, 4096),
		hist: newHistograms(cfg.Stats == StatsOff), sampler: cost.NewSampler(r.dist, uint64(id)+1)}
	l.onMessageFn, l.onTimerFn = l.onMessage, l.onTimer
	var err error
	if shareWith != nil {
		l.epfd, l.table, l.timers, l.timersMu, l.timerRef = shareWith.epfd, table, shareWith.timers, shareWith.timersMu, shareWith.timerRef
	} else {
		if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
			return nil, os.NewSyscallError("epoll_create1", err)
		}
		l.ownsEpfd = true
		if l.table, err = slots.NewTable[source](cfg.MaxConns); err != nil {
			l.closeResources()
			return nil, fmt.Errorf("slot table: %w", err)
		}
	}
	l.ready = readyq.New(cfg.MaxConns)
	if r.design == Prio {
		l.ctlReady = readyq.New(cfg.MaxConns)
	}
	if r.design != OneShot {
		if l.ingress, err = ingress.New[message](cfg.IngressCap); err != nil {
			l.closeResources()
			return nil, fmt.Errorf("ingress: %w", err)
		}
		if _, err = l.addSpecial(l.ingress.Fd(), kindIngress, unix.EPOLLIN); err != nil {
			l.closeResources()
			return nil, err
		}
	}
	if shareWith == nil {
		mode := timers.Periodic
		if cfg.Timer == TimerDeadline {
			mode = timers.Deadline
		}
		if l.timers, err = timers.New(mode, cfg.Tick); err != nil {
			l.closeResources()
			return nil, fmt.Errorf("timers: %w", err)
		}
		if r.design == OneShot {
			l.timersMu = new(sync.Mutex)
		}
		if l.timerRef, err = l.addSpecial(l.timers.Fd(), kindTimer, unix.EPOLLIN|l.oneshotFlag()); err != nil {
			l.closeResources()
			return nil, err
		}
	}
	return l, nil
}

func (l *loop) oneshotFlag() uint32 {
	if l.design == OneShot {
		return unix.EPOLLONESHOT
	}
	return 0
}

// connFlags are the readiness flags a connection is registered with.
func (l *loop) connFlags() uint32 {
	switch l.design {
	case ET:
		return unix.EPOLLET
	case OneShot:
		return unix.EPOLLONESHOT
	}
	return 0
}

// addSpecial registers a non-connection descriptor in the slot table and the
// epoll set.
func (l *loop) addSpecial(fd int, kind sourceKind, events uint32) (slots.Ref, error) {
	s := &source{fd: fd, kind: kind, loop: l, interest: events}
	ref, err := l.table.Alloc(s)
	if err != nil {
		return 0, fmt.Errorf("register fd %d: %w", fd, err)
	}
	s.ref = ref
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, events, ref); err != nil {
		l.table.Free(ref)
		return 0, err
	}
	return ref, nil
}

// listenerEvents is the interest a listener is registered and rearmed with:
// level-triggered, so connections left in the backlog after the accept
// budget are reported again (ONESHOT: one-shot, rearmed after each turn).
func (l *loop) listenerEvents() uint32 {
	if l.cfg.Faults.AcceptOnceET {
		// The mutant: edge-triggered, every design (ONESHOT too: a rearm
		// would re-report the backlog), with one accept per edge (accept).
		return unix.EPOLLIN | unix.EPOLLET
	}
	return unix.EPOLLIN | l.oneshotFlag()
}

func (l *loop) addListener(fd int, control bool) error {
	ref, err := l.addSpecial(fd, kindListener, l.listenerEvents())
	if err != nil {
		unix.Close(fd)
		return err
	}
	s, _ := l.table.Get(ref)
	s.control = control
	l.listeners = append(l.listeners, ref)
	return nil
}

// closeResources closes what the loop owns; used on construction failure
// and at exit.
func (l *loop) closeResources() {
	if l.table != nil && (l.ownsEpfd || l.design != OneShot) {
		l.table.Range(func(ref slots.Ref, s *source) bool {
			if s.kind == kindConn || s.kind == kindListener {
				unix.Close(s.fd)
			}
			s.out.Release()
			l.table.Free(ref)
			return true
		})
	}
	if l.ingress != nil {
		l.ingress.Close()
		l.ingress = nil
	}
	if l.timers != nil && l.ownsEpfd {
		l.timers.Close()
	}
	l.timers = nil
	if l.ownsEpfd && l.epfd >= 0 {
		unix.Close(l.epfd)
	}
	l.epfd = -1
}

// run is the owner loop: every round, in the design notes' order,
// check STOP → drain ingress → run due timers → consume ready sources →
// publish stats → epoll_wait → dispatch the events.
func (l *loop) run() {
	runtime.LockOSThread()
	defer l.r.wg.Done()
	l.tid.Store(int32(unix.Gettid()))
	l.r.threadsUp.Done()
	// The thread stays locked on exit: a thread that ran a reactor is
	// discarded rather than returned to the scheduler's pool.
	if l.cfg.AppTimer > 0 && (l.ownsEpfd || l.design != OneShot) {
		l.scheduleTimer(timerApp, nanotime()+int64(l.cfg.AppTimer), 0)
	}
	roundStart := nanotime()
	lastRoundIdle := false
	for {
		now := roundStart
		l.stats.Rounds++
		// The StopWhenIdle mutant looks for a stop only after a round that
		// did no work.
		checkStop := !l.cfg.Faults.StopWhenIdle || lastRoundIdle
		if checkStop && l.r.stopRequested.Load() && l.stopStep(now) {
			break
		}
		roundProgress := l.progress
		if l.ingressPending {
			l.drainIngress()
		}
		if l.timers != nil {
			l.expireTimers(now)
		}
		l.consume()
		l.publish(now, false)

		timeout := l.waitTimeout()
		var roundEnd int64 // read only for the histogram; wait reuses it
		if !l.hist.off {
			roundEnd = nanotime()
			l.hist.record(l.hist.round, roundEnd-roundStart)
		}
		n, err := l.wait(timeout, roundEnd)
		if err != nil {
			l.r.fail(err)
			continue
		}
		roundStart = nanotime()
		l.wokeAt = roundStart
		l.lastBatch = n
		before := l.progress
		l.dispatch(l.evs[:n])
		if timeout != 0 && l.progress == before {
			l.stats.IdleWakeups++
		}
		lastRoundIdle = l.progress == roundProgress
	}
	l.publish(nanotime(), true)
	l.cpuAtExit.Store(threadCPU(0))
	// Descriptors are closed by the reactor once every loop has exited:
	// ONESHOT workers share theirs.
}

// schedulerYieldEvery is how often, at most, a loop about to block passes
// through the Go scheduler. A locked loop thread that only ever runs its
// own goroutine never advances its P's schedtick, so after 10 ms sysmon
// takes it for a goroutine that will not yield: it retakes the P from the
// blocking epoll_wait and, having retaken one, drops its own sleep back to
// 20 µs. In ping-pong that kept sysmon waking ~1,900 times a second on the
// loop's CPU, and 14% of round trips took a slow mode of about twice the
// median; gnet, whose loop calls Gosched when its poll comes back empty,
// saw ~300 timer wakeups a second there. A yield every few milliseconds,
// well inside sysmon's 10 ms, costs one hand-off of the P (a locked
// goroutine is handed back to its own thread) and lets sysmon back off to
// its 10 ms sleep; the load generator does the same (loadgen's yieldEvery).
// A loop that never blocks is not retaken, only pre-empted by signal every
// 10 ms, as before: yielding every round instead cost lt 3% of its
// pipelined throughput. See docs/PERFORMANCE.md.
const schedulerYieldEvery = 4e6 // ns

// yieldToScheduler calls runtime.Gosched when schedulerYieldEvery has passed
// since the last call that did; wait calls it before blocking.
func (l *loop) yieldToScheduler(now int64) {
	if now-l.lastYield < schedulerYieldEvery {
		return
	}
	runtime.Gosched()
	l.lastYield = nanotime()
}

// waitTimeout: 0 while ready work remains; a short poll while shutting down
// (bounded by the stop grace); otherwise block until an event (the timerfd
// bounds it: every tick, or the nearest deadline).
func (l *loop) waitTimeout() int {
	if l.ingressPending || l.ready.Len() > 0 || (l.ctlReady != nil && l.ctlReady.Len() > 0) {
		return 0
	}
	if !l.stopSeen && l.r.stopRequested.Load() {
		return 0 // this loop read the STOP itself: nobody else will wake it
	}
	if l.stopSeen || len(l.blocked) > 0 {
		// Shutting down (bounded by the stop grace) or waiting for room in
		// the worker pool: poll at a millisecond.
		return 1
	}
	return -1
}

// wait is one epoll_wait (after a zero-timeout poll, in poll-first mode).
// now is the clock at the end of the round, or 0 if it was not read.
func (l *loop) wait(timeout int, now int64) (int, error) {
	l.stats.EpollWaits++
	if timeout == 0 {
		l.stats.ZeroTimeoutWaits++
		n, e := pollNow(l.epfd, l.evs)
		if e != 0 {
			return 0, os.NewSyscallError("epoll_wait", e)
		}
		return n, nil
	}
	// Poll once without blocking first: under load the answer is usually
	// there, and the non-blocking path avoids the runtime's syscall hand-off.
	// Not after a wait that returned a single event: that is a lone client
	// in ping-pong, whose next frame is a round trip away, and the poll
	// that finds nothing cost ~2.5 µs of the ~27 µs each frame cost there.
	if l.cfg.Wait == WaitPollFirst && l.lastBatch > 1 {
		l.stats.ZeroTimeoutWaits++
		if n, e := pollNow(l.epfd, l.evs); e == 0 && n > 0 {
			return n, nil
		}
		l.stats.EpollWaits++
	}
	if now == 0 {
		now = nanotime()
	}
	l.publish(now, true)
	l.yieldToScheduler(now)
	l.stats.BlockingWaits++
	n, err := waitBlocking(l.epfd, l.evs, timeout)
	if err != nil {
		return 0, os.NewSyscallError("epoll_wait", err)
	}
	return n, nil
}

// publish copies the counters for readers at most once per millisecond, and
// always before the loop may block (force).
func (l *loop) publish(now int64, force bool) {
	if !force && now-l.lastPub < 1e6 {
		return
	}
	l.lastPub = now
	l.pubMu.Lock()
	l.pub = l.stats
	l.pubLedger = l.ledger
	l.pubMu.Unlock()
}

func (l *loop) published() (Counters, Ledger) {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	return l.pub, l.pubLedger
}

// dispatch handles one epoll batch: validate each event's (slot, generation),
// then receive, accept or try output according to the design.
func (l *loop) dispatch(evs []unix.EpollEvent) {
	l.stats.Events += uint64(len(evs))
	for i := range evs {
		ev := &evs[i]
		ref := slots.RefOf(ev)
		s, ok := l.table.Get(ref)
		if !ok {
			l.stats.StaleEvents++
			continue
		}
		switch s.kind {
		case kindConn:
			l.onConnEvent(s, ev.Events)
		case kindListener:
			l.accept(s)
		case kindIngress:
			l.ingress.Acknowledge()
			l.ingressPending = true
		case kindTimer:
			l.onTimerEvent()
		case kindStop:
			// The stop flag is checked at the top of every round.
		}
	}
}

func (l *loop) onConnEvent(s *source, events uint32) {
	if l.design == OneShot && !s.owned.CompareAndSwap(0, 1) {
		l.r.fail(fmt.Errorf("oneshot: source %v delivered to a second worker", s.ref))
		return
	}
	if events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		l.stats.EventsErr++
		if s.paused || s.poolWait || s.eof || l.quiesced {
			// The kernel reports ERR/HUP whatever the interest; a source
			// that is not being read would report it forever.
			l.flushAndClose(s)
			return
		}
	}
	if events&unix.EPOLLOUT != 0 {
		l.stats.EventsOut++
		if s.out.Empty() {
			l.stats.EpolloutEmpty++
		}
		l.progress++
		if !l.flush(s) {
			return
		}
	}
	if events&unix.EPOLLRDHUP != 0 {
		s.rdhup = true
	}
	readable := events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0
	if readable {
		l.stats.EventsIn++
	}
	switch l.design {
	case ET:
		if readable {
			l.enqueue(l.ready, s, l.wokeAt)
		}
	case Prio:
		if readable {
			if s.control {
				l.turn(s, l.ctlReady)
			} else {
				l.enqueue(l.ready, s, l.wokeAt)
			}
		}
	case OneShot:
		// The source is this worker's until it is rearmed. Work left after
		// the turn stays on this worker's ready queue, unarmed.
		if readable && l.turn(s, l.ready) {
			return
		}
		if live, ok := l.table.Get(s.ref); ok && live == s {
			l.rearm(s)
		}
	default: // lt, prio-thread: flat, in batch order
		if readable {
			l.turn(s, l.ready)
		}
	}
}

// enqueue puts s on q (dedup) and, with stats on, remembers when it became
// ready: at, when the caller knows it (a source dispatched from an
// epoll_wait became ready no later than the wakeup that reported it, so
// dispatch passes the round's start and saves a clock read per source), or
// now when at is 0.
func (l *loop) enqueue(q *readyq.Queue, s *source, at int64) {
	if q.Push(s.ref) {
		if !l.hist.off {
			if at == 0 {
				at = nanotime()
			}
			s.since = at
		}
		if n := uint64(q.Len()); n > l.stats.ReadyQueueMax {
			l.stats.ReadyQueueMax = n
		}
	}
}

// consume serves sources that still have work: the control bucket first
// (prio), then the ready queue under the consume budget — or, for prio's
// data bucket, under its time budget: the clock is read after every source
// turn (a turn costs syscalls; a clock read, tens of ns) and, within a
// turn, every ClockEvery frames, so the bucket ends within ClockEvery
// frames of its budget however many frames a turn holds.
func (l *loop) consume() {
	// Sources waiting for room in the worker pool try again every round:
	// room may come from another loop's results, which do not wake this one
	// (the wait is bounded by a tick while any are waiting).
	if len(l.blocked) > 0 {
		for _, ref := range l.blocked {
			if s, ok := l.table.Get(ref); ok && s.poolWait {
				s.poolWait = false
				l.enqueue(l.queueFor(s), s, 0)
			}
		}
		l.blocked = l.blocked[:0]
	}
	if l.ctlReady != nil {
		for n := l.ctlReady.Len(); n > 0; n-- {
			ref, ok := l.ctlReady.Pop()
			if !ok {
				break
			}
			if s, ok := l.table.Get(ref); ok {
				l.turn(s, l.ctlReady)
			}
		}
	}
	q := l.ready
	if q.Len() == 0 {
		return
	}
	l.hist.record(l.hist.readyLen, int64(q.Len()))
	budget := l.cfg.Budgets.Consume
	if l.design == Prio {
		budget = q.Len()
		l.bucketEnd = nanotime() + int64(l.cfg.PrioDataBudget)
		defer func() { l.bucketEnd = 0 }()
	}
	for served := 0; served < budget; served++ {
		ref, ok := q.Pop()
		if !ok {
			return
		}
		s, ok := l.table.Get(ref)
		if !ok {
			continue
		}
		if !l.hist.off {
			l.hist.record(l.hist.rotation, nanotime()-s.since)
		}
		requeued := l.turn(s, q)
		if l.design == OneShot && !requeued {
			if live, ok := l.table.Get(ref); ok && live == s {
				l.rearm(s)
			}
		}
		if l.bucketEnd != 0 && nanotime() > l.bucketEnd {
			l.stats.TimeBudgetHits++
			return
		}
	}
}

// rearm re-registers a ONESHOT source after its turn: the application, not
// the kernel, decides when it may fire again. The MissedRearmEvery mutant
// skips it, which silences the connection for good.
func (l *loop) rearm(s *source) {
	if s.stopHeld || l.ready.Queued(s.ref) {
		return // still this worker's: queued for another turn, or held for STOP_ACK
	}
	l.rearmTurns++
	if n := l.cfg.Faults.MissedRearmEvery; n > 0 && l.rearmTurns%n == 0 {
		l.stats.MissedRearms++
		return
	}
	l.stats.Rearms++
	want := l.wantEvents(s)
	s.interest = want
	fd, ref := s.fd, s.ref // s is not ours to read once released
	s.owned.Store(0)       // release: the next owner sees everything written above
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, fd, want, ref); err != nil {
		s.owned.Store(1) // not armed, so still ours
		l.closeSource(s)
	}
}
