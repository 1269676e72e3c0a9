//go:build linux

package reactors

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/uring"
	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/ingress"
	"github.com/reactorlab/reactorlab/reactors/readyq"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/reactors/timers"
)

// Loop is one owner loop on one locked OS thread: the mechanism every
// design shares, with the design's part (its LoopPolicy) plugged in.
// Everything in it is touched only by that thread, except the
// pubMu-guarded published stats and the ingress; in a shared layout the
// slot table, the timer set (under timersMu) and the listeners are shared
// with the other loops, and a connection is touched only by the loop that
// owns it (Source.owned).
type Loop struct {
	r      *Reactor
	id     int
	cfg    *Config
	policy LoopPolicy
	rearm  Rearmer // the policy's, when connections are registered one-shot

	// Registration, from the layout and the policy's ConnFlags.
	shared    bool   // Layout.Shared: one epoll fd, table, timer set and listener set for all loops
	connFlags uint32 // trigger flags of every connection registration
	oneShot   bool   // connFlags has EPOLLONESHOT: interest is applied at the rearm

	epfd     int
	ownsEpfd bool // shared layout: only loop 0 owns the epoll fd, table and timers
	table    *slots.Table[Source]
	ready    *readyq.Queue   // sources with work left after a turn
	queues   []*readyq.Queue // every ready queue: ready, then the design's own
	ingress  *ingress.Queue[message]
	timers   *timers.Set
	timersMu *sync.Mutex // shared layout: the timer set is shared by the loops
	timerRef slots.Ref   // the timerfd's source (rearmed, one-shot, in a shared layout)
	sampler  *cost.Sampler

	// deadline is when the current consume pass must end (0: none), set by
	// a design (Loop.SetDeadline): turns check it where they read the
	// clock, every ClockEvery frames, so one source's long turn cannot
	// carry the pass past its budget.
	deadline int64
	// maxReads ends a turn after that many reads (0: no limit): the
	// NoDrain mutant's one read per edge (Loop.LimitReads).
	maxReads int

	evs     []unix.EpollEvent
	bufs    [][]byte // free read buffers (bufSize each)
	outBufs [][]byte // free out-queue buffers, lent to a connection while it has bytes to send
	bufSize int
	fdIndex []slots.Ref // fd number → current source (used by the FdIdentity mutant)
	blocked []slots.Ref // sources waiting for room in the worker pool
	// discardMore are the drain stop's shut connections whose last
	// discardInput ran out of reads before EAGAIN: an edge-triggered
	// source gets no new edge for what is left, so stopStep reads them
	// again every round (drain_linux.go).
	discardMore []*Source
	listeners   []slots.Ref

	ingressPending bool
	stopSeen       bool
	quiesced       bool
	tasks          int // offloaded callbacks not yet returned
	progress       uint64
	lastYield      int64 // nanotime of the last yieldToScheduler that yielded
	wokeAt         int64 // nanotime when the round's epoll_wait returned
	lastBatch      int   // events the last epoll_wait returned (WaitPollFirst's hint)
	now            int64 // round start, for timer callbacks

	// The real-time hold (restIfHeld): rtHold is Config.RTHold in ns on
	// the control loop when its class is real-time, else 0 (no hold);
	// busySince is when the loop last woke from a blocking wait or rested
	// (0: it is blocking, or about to).
	rtHold    int64
	busySince int64

	// The completion path (Layout.Completion, ring_linux.go): the ring and
	// its buffer ring exist while run runs, on the loop's thread.
	completion  bool
	ring        *uring.Ring
	bufRing     *uring.BufRing
	ringClosing map[slots.Ref]*Source // closed connections whose operations are still in flight
	// recvStarved[starvedHead:] are the receives that ended with ENOBUFS,
	// oldest first, waiting for buffers to come back (rearmStarved);
	// roundBuffers counts the buffers the round gave back to the ring.
	recvStarved  []*Source
	starvedHead  int
	roundBuffers int
	// ringFlushesHandled is the ring's overflow-flush count at the end of
	// the last reap (the uring-overflow-ignored mutant only).
	ringFlushesHandled uint64
	received           []*Source // connections whose receives completed in the batch, served once at its end
	epollReady         bool      // the epoll poll completed: drain the epoll set this round
	sendBufs           [][]byte  // free send buffers

	admit  *limiter // Config.Admission's token bucket; nil when open
	urgent bool     // Config.Urgent is UrgentOOB

	sched atomic.Pointer[string] // the thread's class as the kernel reports it, once running

	onMessageFn func(message) // bound once: a method value per call would allocate
	onTimerFn   func(timers.Timer)
	touched     []*Source // sources given worker results this drain, to flush once
	taskBufs    []*[]byte // free buffers for offloaded frames

	stats  Counters
	ledger Ledger
	hist   *histograms

	// The multi-loop mechanism (handoff_linux.go). handingIn and open are
	// read by the acceptor's assignment; busyRecent and lastDrain by
	// least-loaded; stopObservedNs and endedAt by LoopStats readers.
	handoffBacklog []message     // acceptor: connections no sub-loop had room for, in order
	handingIn      atomic.Int64  // connections pushed to this loop's ingress, not yet registered
	open           atomic.Int64  // data and control connections registered here and open
	lastDrain      atomic.Int64  // nanotime of the last ingress drain
	busyRecent     atomic.Uint64 // float64 bits: busy fraction of the last window
	awakeAt        int64         // when the loop last left a blocking wait (0: in one)
	windowAt       int64         // start of the current busy window
	windowBusy     uint64        // BusyNs at windowAt
	stopObservedNs atomic.Int64  // when this loop first saw the stop, after it was issued; -1 before
	endedAt        atomic.Int64  // nanotime the loop ended (0: running)
	cpuAtStart     atomic.Int64  // the thread's CPU time (ns) when the loop started
	vcswAtStart    atomic.Int64  // the thread's voluntary context switches when the loop started
	vcswAtExit     atomic.Int64  // ... when it ended (-1: running)

	tid       atomic.Int32 // the loop's OS thread, once running
	cpu       atomic.Int32 // the CPU its thread is pinned to (Config.LoopCPUs), -1 for none
	cpuAtExit atomic.Int64 // the thread's CPU time (ns) when the loop ended

	pubMu     sync.Mutex
	pub       Counters
	pubLedger Ledger
	lastPub   int64
}

// newLoop builds loop id of r: its own epoll fd, slot table, ingress and
// timer set, or, given first (shared layout), first's epoll fd, table and
// timers. The design's part is plugged in last, once the loop's resources
// exist.
func newLoop(r *Reactor, id int, first *Loop) (*Loop, error) {
	cfg := &r.cfg
	l := &Loop{r: r, id: id, cfg: cfg, epfd: -1, shared: r.layout.Shared, completion: r.layout.Completion,
		evs: make([]unix.EpollEvent, cfg.MaxEvents), bufSize: max(cfg.Budgets.Bytes, 4096),
		hist: newHistograms(cfg.Stats == StatsOff), sampler: cost.NewSampler(r.dist, uint64(id)+1)}
	if l.completion {
		// Completions bring input whatever the turn's budget: room for a
		// turn's bytes and two receive buffers more (wantRecv stops the
		// receive at a turn's bytes), so the buffer rarely has to grow.
		l.bufSize += 2 * cfg.Ring.BufferSize
	}
	l.onMessageFn, l.onTimerFn = l.onMessage, l.onTimer
	l.stopObservedNs.Store(-1)
	l.vcswAtExit.Store(-1)
	l.ready = readyq.New(cfg.MaxConns)
	adm, _ := ParseAdmission(cfg.Admission) // accepted by Validate
	l.admit = newLimiter(adm, cfg.AdmissionAfter)
	l.urgent = cfg.Urgent == UrgentOOB
	l.queues = []*readyq.Queue{l.ready}
	if err := l.openResources(first); err != nil {
		l.closeResources()
		return nil, err
	}
	l.policy = r.policy.NewLoop(l)
	l.connFlags = l.policy.ConnFlags()
	l.oneShot = l.connFlags&unix.EPOLLONESHOT != 0
	l.rearm, _ = l.policy.(Rearmer)
	if l.oneShot && l.rearm == nil {
		l.closeResources()
		return nil, fmt.Errorf("design %s: connections are registered one-shot but its loop policy has no Rearm", r.design)
	}
	if l.shared && !l.oneShot {
		l.closeResources()
		return nil, fmt.Errorf("design %s: a shared layout must register connections one-shot", r.design)
	}
	return l, nil
}

// openResources opens (or, given first, shares) the loop's epoll fd, slot
// table, ingress and timers.
func (l *Loop) openResources(first *Loop) error {
	cfg := l.cfg
	var err error
	if first != nil {
		l.epfd, l.table, l.timers, l.timersMu, l.timerRef = first.epfd, first.table, first.timers, first.timersMu, first.timerRef
		return nil
	}
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	l.ownsEpfd = true
	if l.table, err = slots.NewTable[Source](cfg.MaxConns); err != nil {
		return fmt.Errorf("slot table: %w", err)
	}
	if !l.shared {
		if l.ingress, err = ingress.New[message](cfg.IngressCap); err != nil {
			return fmt.Errorf("ingress: %w", err)
		}
		if _, err = l.addSpecial(l.ingress.Fd(), kindIngress, unix.EPOLLIN); err != nil {
			return err
		}
	}
	mode := timers.Periodic
	if cfg.Timer == TimerDeadline {
		mode = timers.Deadline
	}
	if l.timers, err = timers.New(mode, cfg.Tick); err != nil {
		return fmt.Errorf("timers: %w", err)
	}
	if l.shared {
		l.timersMu = new(sync.Mutex)
	}
	l.timerRef, err = l.addSpecial(l.timers.Fd(), kindTimer, unix.EPOLLIN|l.sharedFlag())
	return err
}

// sharedFlag is EPOLLONESHOT in a shared layout, for the descriptors every
// loop waits on (listeners, the timerfd): one event wakes one loop, which
// rearms it after its turn. 0 otherwise.
func (l *Loop) sharedFlag() uint32 {
	if l.shared {
		return unix.EPOLLONESHOT
	}
	return 0
}

// closeResources closes what the loop owns; used on construction failure
// and at exit.
func (l *Loop) closeResources() {
	if l.table != nil && (l.ownsEpfd || !l.shared) {
		l.table.Range(func(ref slots.Ref, s *Source) bool {
			if (s.kind == kindConn || s.kind == kindListener) && !s.borrowed && s.fd >= 0 {
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

// run is the owner loop: every round, in this order,
// check STOP → drain ingress → run due timers → consume ready sources →
// publish stats → epoll_wait → dispatch the events.
func (l *Loop) run() {
	runtime.LockOSThread()
	defer l.r.wg.Done()
	if err := l.pinLoop(); err != nil {
		l.r.fail(err)
	}
	l.cpuAtStart.Store(threadCPU(0))
	l.vcswAtStart.Store(ownSwitches())
	l.tid.Store(int32(unix.Gettid()))
	l.enterSched()
	if l.completion {
		if err := l.openRing(); err != nil {
			l.closeRing()
			l.r.fail(err)
		}
		defer l.closeRing() // on this thread, before the reactor closes the descriptors
	}
	l.r.threadsUp.Done()
	// The thread stays locked on exit: a thread that ran a reactor is
	// discarded rather than returned to the scheduler's pool.
	if l.cfg.AppTimer > 0 && (l.ownsEpfd || !l.shared) {
		l.scheduleTimer(timerApp, nanotime()+int64(l.cfg.AppTimer), 0)
	}
	roundStart := nanotime()
	l.awakeAt, l.windowAt = roundStart, roundStart
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
		if len(l.handoffBacklog) > 0 {
			l.retryHandoffs()
		}
		if l.timers != nil {
			l.expireTimers(now)
		}
		l.consume()
		if l.admit != nil {
			l.endAdmissionRound(now)
		}
		if l.rtHold > 0 {
			l.restIfHeld()
		}
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
		if l.awakeAt == 0 { // back from a blocking wait: a busy span starts
			l.awakeAt = roundStart
		}
		l.lastBatch = n
		before := l.progress
		if l.ring != nil {
			n = l.reapRing()
		}
		l.dispatch(l.evs[:n])
		if l.rtHold > 0 {
			l.restIfHeld()
		}
		if timeout != 0 && l.progress == before {
			l.stats.IdleWakeups++
		}
		lastRoundIdle = l.progress == roundProgress
	}
	end := nanotime()
	l.noteBusy(end)
	l.publish(end, true)
	l.cpuAtExit.Store(threadCPU(0))
	l.vcswAtExit.Store(ownSwitches())
	l.endedAt.Store(end)
	// Descriptors are closed by the reactor once every loop has exited:
	// a shared layout's loops share theirs.
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
// 10 ms; yielding every round instead cost lt 3% of its pipelined
// throughput. See docs/PERFORMANCE.md.
const schedulerYieldEvery = 4e6 // ns

// yieldToScheduler calls runtime.Gosched when schedulerYieldEvery has passed
// since the last call that did; wait calls it before blocking.
func (l *Loop) yieldToScheduler(now int64) {
	if now-l.lastYield < schedulerYieldEvery {
		return
	}
	runtime.Gosched()
	l.lastYield = nanotime()
}

// waitTimeout: 0 while ready work remains; a short poll while shutting down
// (bounded by the stop grace); otherwise block until an event (the timerfd
// bounds it: every tick, or the nearest deadline).
func (l *Loop) waitTimeout() int {
	if l.ingressPending || l.epollReady {
		return 0
	}
	for _, q := range l.queues {
		if q.Len() > 0 {
			return 0
		}
	}
	if !l.stopSeen && l.r.stopRequested.Load() {
		return 0 // this loop read the STOP itself: nobody else will wake it
	}
	if l.stopSeen || len(l.blocked) > 0 || len(l.handoffBacklog) > 0 {
		// Shutting down (bounded by the stop grace), waiting for room in
		// the worker pool or in a sub-loop's ingress: poll at a millisecond.
		return 1
	}
	return -1
}

// wait is one epoll_wait (after a zero-timeout poll, in poll-first mode).
// now is the clock at the end of the round, or 0 if it was not read.
func (l *Loop) wait(timeout int, now int64) (int, error) {
	if l.ring != nil {
		return 0, l.waitRing(timeout, now) // reapRing collects the round's events
	}
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
	l.noteBusy(now)
	l.publish(now, true)
	l.yieldToScheduler(now)
	l.stats.BlockingWaits++
	if l.rtHold > 0 {
		l.noteHold(now)
	}
	l.busySince = 0
	n, err := waitBlocking(l.epfd, l.evs, timeout)
	if err != nil {
		return 0, os.NewSyscallError("epoll_wait", err)
	}
	return n, nil
}

// publish copies the counters for readers at most once per millisecond, and
// always before the loop may block (force).
func (l *Loop) publish(now int64, force bool) {
	if !force && now-l.lastPub < 1e6 {
		return
	}
	l.lastPub = now
	l.updateRecentBusy(now)
	l.pubMu.Lock()
	l.pub = l.stats
	if l.awakeAt != 0 { // the busy span in progress
		l.pub.BusyNs += uint64(max(0, now-l.awakeAt))
	}
	l.pubLedger = l.ledger
	l.pubMu.Unlock()
}

func (l *Loop) published() (Counters, Ledger) {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	return l.pub, l.pubLedger
}

// dispatch handles one epoll batch: validate each event's (slot, generation),
// then hand it to its kind: a connection's event (onConnEvent), an accept
// turn, the ingress or the timers.
func (l *Loop) dispatch(evs []unix.EpollEvent) {
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

// onConnEvent does with an event of connection s what every design does —
// take ownership of a one-shot source, close on an error or hang-up of a
// source that is not being read, flush on EPOLLOUT, note EPOLLRDHUP — and
// hands the rest to the design (LoopPolicy.OnEvent).
func (l *Loop) onConnEvent(s *Source, events uint32) {
	if l.oneShot && !s.owned.CompareAndSwap(0, 1) {
		l.r.fail(fmt.Errorf("one-shot source %v delivered to a second loop", s.ref))
		return
	}
	if s.shutWr {
		// Drain stop: the echoes are written and the FIN sent; what comes
		// now is read only to be dropped, until the client's EOF.
		more := l.discardInput(s)
		switch {
		case s.state == stateClosed:
		case l.oneShot:
			l.rearm.Rearm(s) // the rearm reports what is left
		case more:
			l.queueDiscard(s)
		}
		return
	}
	if events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		l.stats.EventsErr++
		if s.state != stateReading || l.quiesced {
			// The kernel reports ERR/HUP whatever the interest; a source
			// that is not being read would report it forever.
			l.flushAndClose(s)
			return
		}
	}
	if events&unix.EPOLLPRI != 0 && l.urgent && !s.control {
		l.serveUrgent(s) // before the in-band batch
		if s.state == stateClosed {
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
	l.policy.OnEvent(s, readable)
}

// consume is the round's consume step: sources waiting for room in the
// worker pool try again (room may come from another loop's results, which
// do not wake this one; the wait is bounded by a tick while any are
// waiting), then the design serves its ready queues (LoopPolicy.Consume).
func (l *Loop) consume() {
	if len(l.blocked) > 0 {
		for _, ref := range l.blocked {
			if s, ok := l.table.Get(ref); ok && s.state == statePoolWait {
				if s.out.Paused() {
					l.setState(s, statePaused) // results grew its out-queue meanwhile
					l.stats.BackpressureOn++
					continue
				}
				l.setState(s, stateReading)
				l.enqueue(l.policy.QueueFor(s), s, 0)
			}
		}
		l.blocked = l.blocked[:0]
	}
	if n := l.ready.Len(); n > 0 {
		l.hist.record(l.hist.readyLen, int64(n))
	}
	l.policy.Consume()
}

// enqueue puts s on q (dedup) and, with stats on, remembers when it became
// ready: at, when the caller knows it (a source dispatched from an
// epoll_wait became ready no later than the wakeup that reported it, so
// dispatch passes the round's start and saves a clock read per source), or
// now when at is 0.
func (l *Loop) enqueue(q *readyq.Queue, s *Source, at int64) {
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
