//go:build linux

package loadgen

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/wire"
)

// never is a deadline that does not come.
const never = math.MaxInt64

// epoll_event.data for the loop's own fds; connections use their index.
const (
	evTimer = -1
	evWake  = -2
)

// stopSeq is the seq of the STOP frame; OverSizeSeq (MaxUint64) is taken.
const stopSeq = math.MaxUint64 - 1

// readBufSize is the size of the loop's read buffer (one read per readable
// connection per round).
const readBufSize = 128 << 10

// spinWait is the longest wait for a deadline that the loop spins through
// (polling epoll) rather than sleeps through: arming a timer, sleeping and
// waking cost tens of µs of CPU on a virtual machine, and the wake-up comes
// tens of µs late.
const spinWait = 20 * time.Microsecond

// pollPays: a blocking wait that returned within this had events waiting
// (sleeping and waking takes longer), so the next wait polls first; after a
// wait that slept, or a poll that found nothing, the next wait goes straight
// to the blocking epoll_wait. A zero-timeout poll costs a syscall (1.1 µs on
// the lab's virtual machine) and pays only when it finds events; a blocking
// wait that finds them at once costs the runtime's syscall bookkeeping on
// top, about 0.1 µs. At hot k=1 the empty poll before every sleep was one of
// four syscalls per frame (perf stat: 4 → 3); the CPU it saves there, about
// 1 µs of 20, is within BenchmarkCapacity's noise.
const pollPays = 5 * time.Microsecond

// sendGrain batches the steady sources when they send more than one frame
// per grain in all: their deadlines are rounded up to multiples of it, so the
// loop wakes at most once per grain to send, every source's due frames go
// out together, and a frame waits at most a grain longer (it shows in
// send-lag and in the corrected latency). Below that rate every frame is
// sent at its own intended time.
const sendGrain = 50 * time.Microsecond

// yieldEvery is the longest the loop goes without passing through the Go
// scheduler, checked when it is about to block. Its goroutine is locked to
// its thread and never yields by itself, so its P's schedtick stands still;
// once that has lasted 10 ms (the runtime's forcePreemptNS), sysmon treats
// the goroutine as a hog: it takes the P away whenever it finds the loop
// blocked in epoll_wait and, having retaken a P, checks again every 20 µs,
// each check a thread wake-up (several µs on a virtual machine). perf stat
// on BenchmarkCapacity pinned/hot=1/k=16: without the yield sysmon's thread
// ran 20 ms per 0.5 s beside the loop's 188 ms, with it 2 ms; with both
// processes on one CPU, 66-78 ns per frame became 5-7. A yield costs two
// thread switches, at most 250 times a second.
const yieldEvery = int64(4 * time.Millisecond)

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
// Run locks its goroutine to an OS thread for the loop; the only goroutines
// it starts (progress reports, the cancellation hook) have ended when it
// returns, and every descriptor it opened is closed.
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

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	l, err := newLoop(cfg, fs, dataSA, ctlSA)
	if err != nil {
		return nil, err
	}
	defer l.closeAll()

	// Cancellation wakes the loop through its eventfd. The hook must be gone
	// before the eventfd is closed (deferred above, so run after this).
	fired := make(chan struct{})
	stopHook := context.AfterFunc(ctx, func() {
		writeEventfd(l.efd)
		close(fired)
	})
	defer func() {
		if !stopHook() {
			<-fired
		}
	}()

	if err := l.connectAll(); err != nil {
		return nil, err
	}
	if l.interrupted {
		return nil, fmt.Errorf("loadgen: interrupted while connecting: %w", context.Cause(ctx))
	}

	if cfg.Progress != nil {
		reports := make(chan Progress, 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			for p := range reports {
				cfg.Progress(p)
			}
		})
		l.progress = reports
		defer wg.Wait()
		defer close(reports)
	}
	if err := l.run(); err != nil {
		return nil, err
	}
	return l.result(), nil
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
	conns     []*conn
	stopConn  *conn
	prefix    uint64  // high 32 bits of every token of this run
	tokens    []*conn // token serial (low 32 bits) → its source; [0] unused
	readBuf   []byte
	scratch   [3][]int64 // latency batches: data (or control), data-uncorrected, send-lag
	startWall time.Time

	rec                                *results.Recorder
	cData, cRaw, cControl, cStop, cLag *results.Class
	t0                                 int64 // nanotime at the start of sending
	now                                int64 // ns since t0
	phase                              phase
	measureFrom, sendEnd, drainEnd     int64
	sendStopped                        int64 // when sending ended (<= sendEnd)
	nextInterval                       int64 // next interval boundary (recorder, progress)
	armed                              int64 // deadline armed on the timerfd, or never
	interrupted                        bool
	connectDeadline                    int64
	cpu0, cpu1                         int64 // loop thread CPU at start and end
	ru0, ru1                           unix.Rusage
	wall                               int64 // ns from start of sending to the end
	progress                           chan Progress
	lastEchoed                         uint64
	lastReport                         int64 // l.now at the last progress report
	lastYield                          int64
	pollFirst                          bool // the last wait found events without sleeping

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
	invalid    []string
}

func newLoop(cfg Config, fs []faults.WireFault, dataSA, ctlSA unix.Sockaddr) (l *loop, err error) {
	l = &loop{cfg: cfg, faults: fs, epfd: -1, tfd: -1, efd: -1, armed: never, stopDue: never,
		readBuf: make([]byte, readBufSize)}
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
		fd, id int
		ev     uint32
	}{{l.tfd, evTimer, unix.EPOLLIN | unix.EPOLLET}, {l.efd, evWake, unix.EPOLLIN}} {
		ev := unix.EpollEvent{Events: r.ev, Fd: int32(r.id)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, r.fd, &ev); err != nil {
			return nil, os.NewSyscallError("epoll_ctl add", err)
		}
	}
	l.prefix = uint64(rand.Uint32()|1) << 32
	l.tokens = []*conn{nil}
	frame := wire.HeaderSize + cfg.Payload
	for i := range cfg.Hot {
		l.addConn(kindHot, i, dataSA, wire.KindData, frame, cfg.InFlight, ringFor(2*cfg.InFlight))
	}
	for i := range cfg.Steady {
		l.addConn(kindSteady, i, dataSA, wire.KindData, frame, cfg.Window, ringFor(cfg.Window))
	}
	for i := range cfg.Control {
		l.addConn(kindControl, i, ctlSA, wire.KindPing, wire.HeaderSize, 1, 4)
	}
	if cfg.StopAt > 0 {
		l.stopConn = l.conns[cfg.Hot+cfg.Steady]
	}
	l.evs = make([]unix.EpollEvent, min(max(len(l.conns)+2, 16), 1024))
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

func (l *loop) addConn(kind connKind, i int, sa unix.Sockaddr, fk wire.Kind, frame, limit, ring int) {
	c := &conn{l: l, idx: len(l.conns), kind: kind, name: fmt.Sprintf("%s-%d", kind, i), sa: sa, fd: -1,
		frameKind: fk, frameSize: frame, limit: limit, ring: make([]slot, ring), mask: uint64(ring - 1),
		split: splitter{max: max(frame, 64<<10)}, blockedSince: -1, serviceFrom: -1, endSeq: math.MaxUint64}
	switch kind {
	case kindSteady:
		c.period = 1e9 * float64(l.cfg.Steady) / l.cfg.Rate
		c.phase = int64(c.period * float64(i) / float64(l.cfg.Steady))
	case kindControl:
		c.period = float64(l.cfg.ControlEvery)
		c.phase = int64(c.period * float64(i) / float64(l.cfg.Control))
		if l.cfg.ControlEvery == 0 {
			c.endSeq = 0 // a connection for STOP only
		}
	}
	l.conns = append(l.conns, c)
}

// newToken returns a token never used before in this run, for c.
func (l *loop) newToken(c *conn) uint64 {
	l.tokens = append(l.tokens, c)
	return l.prefix | uint64(len(l.tokens)-1)
}

// owner returns the source that used token, or nil if it is not one of ours.
func (l *loop) owner(token uint64) *conn {
	if token&^0xffffffff != l.prefix {
		return nil
	}
	if s := token & 0xffffffff; s > 0 && s < uint64(len(l.tokens)) {
		return l.tokens[s]
	}
	return nil
}

func (l *loop) closeAll() {
	for _, c := range l.conns {
		if c.fd >= 0 {
			unix.Close(c.fd)
			c.fd = -1
		}
	}
	for _, fd := range []*int{&l.epfd, &l.tfd, &l.efd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// clock refreshes and returns l.now.
func (l *loop) clock() int64 {
	l.now = nanotime() - l.t0
	return l.now
}

// connectAll connects every source, in parallel, within ConnectTimeout.
func (l *loop) connectAll() error {
	l.t0 = nanotime()
	l.phase = phaseConnecting
	l.connectDeadline = int64(l.cfg.ConnectTimeout)
	for _, c := range l.conns {
		if err := c.connect(); err != nil {
			return fmt.Errorf("loadgen: connecting %s to %s: %w", c.name, c.addr(), err)
		}
	}
	for {
		pending := 0
		for _, c := range l.conns {
			switch c.state {
			case stConnecting:
				pending++
			case stDead:
				return fmt.Errorf("loadgen: connecting %s to %s: %s", c.name, c.addr(), c.ended)
			}
		}
		if pending == 0 || l.interrupted {
			return nil
		}
		if l.clock() >= l.connectDeadline {
			return fmt.Errorf("loadgen: %d connections not established within %v (connect-timeout)", pending, l.cfg.ConnectTimeout)
		}
		if err := l.wait(l.connectDeadline); err != nil {
			return err
		}
	}
}

// run is the sending and draining phases.
func (l *loop) run() error {
	l.startWall = time.Now()
	l.t0 = nanotime()
	l.now = 0
	cfg := l.cfg
	l.rec = results.NewRecorder(l.startWall, cfg.Interval, cfg.Warmup)
	for _, p := range []struct {
		c    **results.Class
		name string
	}{{&l.cData, ClassData}, {&l.cRaw, ClassDataUncorrected}, {&l.cControl, ClassControl}, {&l.cStop, ClassStop}, {&l.cLag, ClassSendLag}} {
		*p.c, _ = l.rec.Class(p.name) // constant names: valid
	}
	for _, c := range l.conns {
		if c.kind != kindControl {
			c.service, _ = l.rec.Class(ClassServicePrefix + c.name) // "service/hot-0": valid
		}
	}
	if cfg.Rate*sendGrain.Seconds() > 1 {
		l.grain = int64(sendGrain)
	}
	l.measureFrom = int64(cfg.Warmup)
	l.sendEnd = int64(cfg.Warmup + cfg.Duration)
	l.sendStopped = l.sendEnd
	l.drainEnd = never
	if cfg.StopAt > 0 {
		l.stopDue = int64(cfg.Warmup + cfg.StopAt)
		l.stop = &StopOutcome{Connection: l.stopConn.name}
	}
	first := cfg.Warmup % cfg.Interval
	if first == 0 {
		first = cfg.Interval
	}
	l.nextInterval = int64(first)
	l.phase = phaseSending
	for _, c := range l.conns {
		c.start()
	}
	l.cpu0 = threadCPU()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &l.ru0)

	for l.phase != phaseDone {
		l.clock()
		deadline := l.tick()
		if l.phase == phaseDone {
			break
		}
		if err := l.wait(deadline); err != nil {
			return err
		}
	}
	l.wall = l.clock()
	l.cpu1 = threadCPU()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &l.ru1)
	l.finish()
	return nil
}

// tick does what is due at l.now and returns the next deadline.
func (l *loop) tick() int64 {
	now := l.now
	l.rec.Advance(time.Duration(now))
	if now >= l.nextInterval {
		l.report()
		for l.nextInterval <= now {
			l.nextInterval += int64(l.cfg.Interval)
		}
	}
	if l.phase == phaseSending {
		if l.interrupted || now >= l.sendEnd {
			l.endSending()
		} else if now >= l.stopDue && !l.stopSent {
			l.sendStop()
		}
	}
	if l.phase == phaseDraining && (now >= l.drainEnd || l.interrupted || l.settled()) {
		l.phase = phaseDone
		return now
	}
	deadline := l.nextInterval
	switch l.phase {
	case phaseSending:
		deadline = min(deadline, l.sendEnd)
		if !l.stopSent {
			deadline = min(deadline, l.stopDue)
		}
	case phaseDraining:
		deadline = min(deadline, l.drainEnd)
	}
	alive := 0
	for _, c := range l.conns {
		w := c.deadline()
		if w <= now {
			c.fire()
			w = c.deadline()
		}
		deadline = min(deadline, w)
		if c.state != stDead {
			alive++
		}
	}
	if alive == 0 && l.phase == phaseSending {
		l.endSending() // every source has ended: nothing more to send or read
		return now
	}
	return deadline
}

// endSending stops every source from sending; the drain begins (none if
// the run was interrupted). At the normal end, frames intended before it
// that a late loop has not sent yet are sent first: the schedule is kept,
// and their lateness shows in send-lag and in the corrected latency.
func (l *loop) endSending() {
	if !l.interrupted && l.now >= l.sendEnd {
		for _, c := range l.conns {
			if c.kind != kindHot && c.state == stOpen {
				c.sendDue()
			}
		}
	}
	l.phase = phaseDraining
	l.sendStopped = min(l.now, l.sendEnd)
	l.drainEnd = l.now + int64(l.cfg.Drain)
	if l.interrupted {
		l.drainEnd = l.now
	}
	for _, c := range l.conns {
		c.unblock()
	}
}

// settled reports whether no sent frame awaits an answer on any connection.
func (l *loop) settled() bool {
	for _, c := range l.conns {
		if c.state != stDead && c.sentOutstanding() > 0 {
			return false
		}
	}
	return true
}

// wait waits for events until deadline (ns since t0) and handles them.
func (l *loop) wait(deadline int64) error {
	n, e := 0, unix.Errno(0)
	spin := deadline > l.now && deadline-l.clock() <= int64(spinWait)
	if l.pollFirst || spin || deadline <= l.now {
		if n, e = pollNow(l.epfd, l.evs); e != 0 {
			return fmt.Errorf("loadgen: %w", os.NewSyscallError("epoll_wait", e))
		}
		l.pollFirst = n > 0
	}
	if n == 0 && spin {
		// Sleeping and waking costs more CPU than spinning this long (tens
		// of µs on a virtual machine): poll until the deadline or an event.
		for n == 0 && l.clock() < deadline {
			if n, e = pollNow(l.epfd, l.evs); e != 0 {
				return fmt.Errorf("loadgen: %w", os.NewSyscallError("epoll_wait", e))
			}
		}
	}
	if n == 0 && deadline > l.now {
		if deadline != l.armed && deadline != never {
			if err := armTimer(l.tfd, deadline-l.clock()); err != nil {
				return fmt.Errorf("loadgen: %w", err)
			}
			l.armed = deadline
		}
		if l.now-l.lastYield >= yieldEvery {
			l.lastYield = l.now
			runtime.Gosched()
		}
		before := l.clock()
		var err error
		n, err = waitBlocking(l.epfd, l.evs, -1)
		// The wait may have slept for as long as the target stalled: the
		// events below write (markSent stamps each frame's write time with
		// l.now) and read, so l.now must be the time after the wait, never
		// the time before it.
		slept := l.clock() - before
		if err != nil {
			return fmt.Errorf("loadgen: %w", err)
		}
		l.pollFirst = slept < int64(pollPays)
	}
	for i := range n {
		ev := l.evs[i]
		switch ev.Fd {
		case evTimer:
			l.armed = never
		case evWake:
			drainFd(l.efd)
			l.interrupted = true
		default:
			c := l.conns[ev.Fd]
			if c.fd < 0 || ev.Pad != c.gen {
				continue // an event of a connection since closed
			}
			c.onEvent(ev.Events)
		}
	}
	return nil
}

// sendStop writes the STOP probe.
func (l *loop) sendStop() {
	l.stopSent = true
	c := l.stopConn
	if c.state != stOpen {
		l.stop.Status = "not sent: " + c.name + " is not connected (" + c.ended + ")"
		return
	}
	c.queueStop()
	l.stopSentAt = l.now
	l.stop.SentAtS = time.Duration(l.now).Seconds()
}

// onStopAnswer handles the answer to the STOP probe: STOP_ACK, or the STOP
// frame itself from a byte-echo target.
func (l *loop) onStopAnswer(h wire.Header, payload []byte, now int64) {
	if l.stop.Status != "" {
		return // a second answer; the first one counts
	}
	if h.Kind == wire.KindStop {
		l.stop.Status = "not acknowledged: echoed"
		return
	}
	l.stop.Status = "acknowledged"
	l.stopAcked = true
	l.cStop.Record(time.Duration(now - l.stopSentAt))
	l.stop.LatencyUs = float64(now-l.stopSentAt) / 1e3
	led, err := wire.DecodeLedger(payload)
	if err != nil {
		l.stop.LedgerError = err.Error()
		l.invalid = append(l.invalid, fmt.Sprintf("STOP_ACK on %s: %v", l.stopConn.name, err))
	} else {
		l.stop.Ledger = &led
		l.stop.Balanced = led.Balanced()
		if !led.Balanced() {
			l.invalid = append(l.invalid, fmt.Sprintf("STOP_ACK ledger not balanced: accepted %d != completed %d + rejected %d",
				led.Accepted, led.Completed, led.Rejected))
		}
	}
	if l.phase == phaseSending {
		l.endSending() // the target has stopped: nothing more will be admitted
	}
}

// report sends a progress report, if anyone listens and is ready.
func (l *loop) report() {
	if l.progress == nil {
		return
	}
	var data, control Accounting
	for _, c := range l.conns {
		if c.kind == kindControl {
			control.Sent += c.acct.Sent
			control.Echoed += c.acct.Echoed
		} else {
			data.Sent += c.acct.Sent
			data.Echoed += c.acct.Echoed
		}
	}
	// The rate is over the time since the last report: the first interval
	// may be shorter than the others (the log's intervals start at the end
	// of the warm-up).
	p := newProgress(time.Duration(l.now), l.now >= l.measureFrom, data, control, l.lastEchoed, time.Duration(l.now-l.lastReport))
	l.lastEchoed, l.lastReport = p.Echoed, l.now
	p.DataP99, _ = l.rec.LastIntervalValueAt(ClassData, 99)
	p.ControlP99, _ = l.rec.LastIntervalValueAt(ClassControl, 99)
	select {
	case l.progress <- p:
	default: // the callback is still busy with the previous one
	}
}

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
		} else {
			r.Totals.add(cr.Accounting)
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
