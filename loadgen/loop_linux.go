//go:build linux

package loadgen

// The loop's phases: connecting, ticking through deadlines, waiting on
// epoll, the STOP probe, progress reports.

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/epollsys"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/wire"
)

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

// clock refreshes and returns l.now.
func (l *loop) clock() int64 {
	l.now = epollsys.Nanotime() - l.t0
	return l.now
}

// connectAll connects every source, in parallel, within ConnectTimeout.
func (l *loop) connectAll() error {
	l.t0 = epollsys.Nanotime()
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

// run is the sending and draining phases, from the group's start of
// sending (g.t0, g.startWall): with a hot lead, the lead first, then the
// measured schedule from the group's g.schedStart. What is still
// outstanding at the end is settled by finish, once every loop of the
// group has run.
func (l *loop) run() error {
	l.beginSending()
	if l.cfg.HotLead > 0 {
		if proceed, err := l.lead(); err != nil || !proceed {
			return err
		}
	}
	l.beginSchedule(l.g.schedStart)
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
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &l.ru1)
	return nil
}

// beginSending starts the loop's clock at the group's start of sending:
// nothing is scheduled yet (beginSchedule), but the sources already
// serving (the hot ones of a lead) may send.
func (l *loop) beginSending() {
	l.startWall = l.g.startWall
	l.t0 = l.g.t0
	l.clock()
	l.measureFrom, l.sendEnd, l.sendStopped, l.drainEnd = never, never, never, never
	l.nextInterval = never
	l.phase = phaseSending
	if l.ur != nil {
		l.ur.activate()
	}
	l.cpu0 = threadCPU()
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &l.ru0)
}

// beginSchedule starts the measured schedule at s (ns since t0; 0 without
// a hot lead): the recorder, whose warm-up ends at s + Warmup, the
// measured period and its end, the STOP probe, the first interval
// boundary after s, and every source's and the churn's timetable, offset
// by s.
func (l *loop) beginSchedule(s int64) {
	cfg := l.cfg
	l.schedStart = s
	l.rec = record.NewRecorder(l.startWall, cfg.Interval, time.Duration(s)+cfg.Warmup)
	for _, p := range []struct {
		c    **record.Class
		name string
	}{{&l.cData, ClassData}, {&l.cRaw, ClassDataUncorrected}, {&l.cControl, ClassControl}, {&l.cStop, ClassStop}, {&l.cLag, ClassSendLag}} {
		*p.c, _ = l.rec.Class(p.name) // constant names: valid
	}
	for _, c := range l.conns {
		if c.kind != kindControl {
			c.service, _ = l.rec.Class(ClassServicePrefix + c.name) // "service/hot-0": valid
		}
	}
	if cfg.UrgentEvery > 0 {
		l.cUrgent, _ = l.rec.Class(ClassUrgent) // a constant name: valid
	}
	if cfg.Hot > 0 && cfg.Steady > 0 {
		l.cSteady, _ = l.rec.Class(ClassSteady) // a constant name: valid
	}
	if cfg.Rate*sendGrain.Seconds() > 1 {
		l.grain = int64(sendGrain)
	}
	l.openSampleLogs()
	l.measureFrom = s + int64(cfg.Warmup)
	if cfg.Precision > 0 {
		l.precision = &PrecisionOutcome{Target: cfg.Precision, Class: precisionClass(cfg), Percentile: HeadlinePercentile}
	}
	l.sendEnd = l.measureFrom + int64(cfg.Duration)
	l.sendStopped = l.sendEnd
	l.drainEnd = never
	if l.stopConn != nil {
		l.stopDue = l.measureFrom + int64(cfg.StopAt)
		l.stop = &StopOutcome{Connection: l.stopConn.name}
	}
	// The interval boundaries are measureFrom + k·Interval: the first one
	// after s.
	iv := int64(cfg.Interval)
	l.nextInterval = l.measureFrom - (l.measureFrom-s)/iv*iv
	if l.nextInterval <= s {
		l.nextInterval += iv
	}
	l.phase = phaseSending
	for _, c := range l.conns {
		c.start()
	}
	if l.churn != nil {
		l.churn.begin()
	}
}

// tick does what is due at l.now and returns the next deadline.
func (l *loop) tick() int64 {
	now := l.now
	if l.rec != nil { // nil during a hot lead
		l.rec.Advance(time.Duration(now))
	}
	if now >= l.nextInterval {
		l.report()
		for l.nextInterval <= now {
			l.nextInterval += int64(l.cfg.Interval)
		}
	}
	if l.phase == phaseSending {
		if !l.interrupted && now >= l.sendEnd && l.extendForPrecision() {
			// sending goes on to the new end
		} else if l.interrupted || now >= l.sendEnd {
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
	if l.churn != nil {
		deadline = min(deadline, l.churn.fire())
	}
	if alive == 0 && l.phase == phaseSending && !l.leading && l.churn == nil {
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
			if c.urgent != nil && c.state == stOpen {
				c.sendUrgentDue()
			}
		}
		if l.churn != nil {
			l.churn.openDue()
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

// settled reports whether no sent frame, no urgent byte and no churn
// connection awaits an answer.
func (l *loop) settled() bool {
	if l.churn != nil && l.churn.open > 0 {
		return false
	}
	for _, c := range l.conns {
		if c.state != stDead && (c.sentOutstanding() > 0 || c.urgent != nil && c.urgent.out) {
			return false
		}
	}
	return true
}

// wait waits for events until deadline (ns since t0) and handles them.
func (l *loop) wait(deadline int64) error {
	if l.ur != nil && l.ur.active {
		return l.ur.wait(deadline)
	}
	n, e := 0, unix.Errno(0)
	spin := deadline > l.now && deadline-l.clock() <= int64(spinWait)
	if l.pollFirst || spin || deadline <= l.now {
		if n, e = epollsys.PollNow(l.epfd, l.evs); e != 0 {
			return fmt.Errorf("loadgen: %w", os.NewSyscallError("epoll_wait", e))
		}
		l.pollFirst = n > 0
	}
	if n == 0 && spin {
		// Sleeping and waking costs more CPU than spinning this long (tens
		// of µs on a virtual machine): poll until the deadline or an event.
		for n == 0 && l.clock() < deadline {
			if n, e = epollsys.PollNow(l.epfd, l.evs); e != 0 {
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
		n, e = epollsys.WaitBlocking(l.epfd, l.evs, -1)
		// The wait may have slept for as long as the target stalled: the
		// events below write (markSent stamps each frame's write time with
		// l.now) and read, so l.now must be the time after the wait, never
		// the time before it.
		slept := l.clock() - before
		if e != 0 {
			return fmt.Errorf("loadgen: %w", os.NewSyscallError("epoll_wait", e))
		}
		l.pollFirst = slept < int64(pollPays)
	}
	for i := range n {
		ev := &l.evs[i]
		switch r := slots.RefOf(ev); r {
		case refTimer:
			l.armed = never
		case refWake:
			drainFd(l.efd)
			l.onWake()
		default:
			if r.Slot() >= churnSlotBase {
				l.churn.onEvent(r, ev.Events)
				continue
			}
			c := l.conns[r.Slot()]
			if c.fd < 0 || r.Gen() != c.gen {
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
	l.g.stopSent.Store(true) // before the write: a close it provokes on another loop is after STOP
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
	l.g.stopAcked.Store(true)
	l.g.wakeAll(l) // the other loops end sending too
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

// report sends a progress report for the interval boundary just passed
// (l.nextInterval), if anyone listens and is ready.
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
	case l.progress <- loopProgress{loop: l.index, boundary: l.nextInterval, p: p}:
	default: // the merger is behind: this report is skipped
	}
}
