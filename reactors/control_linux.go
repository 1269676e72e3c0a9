//go:build linux

package reactors

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/reactors/timers"
	"github.com/reactorlab/reactorlab/wire"
)

func isTooLarge(err error) bool { return errors.Is(err, wire.ErrTooLarge) }

// onStopFrame handles STOP on a control connection. The first STOP (frame
// or Stop) wins; a later or concurrent one is answered with REJECT. The
// winner's connection is answered by STOP_ACK once every loop has
// quiesced; under ONESHOT it is held unarmed until then. It reports whether
// s is still open.
func (l *loop) onStopFrame(s *source, h wire.Header) bool {
	now := nanotime()
	at := now
	if d := now - int64(h.SendNs); h.SendNs != 0 && d > 0 && d < 60e9 {
		at = int64(h.SendNs) // sender on this host used CLOCK_MONOTONIC
	}
	if !l.r.requestStop(at, l, s.ref, &h) {
		return l.reject(s, h, "stop already in progress")
	}
	if l.design == OneShot {
		s.stopHeld = true
	}
	return true
}

// stopStep runs at the top of every round once a stop was requested. First
// sight: record the observation latency and close admission. When no
// offloaded callback is outstanding the loop quiesces (its ledger is final
// and it reads no more). After STOP_ACK it exits once every out-queue has
// drained or the grace period has passed.
func (l *loop) stopStep(now int64) (exit bool) {
	r := l.r
	if !l.stopSeen {
		l.stopSeen = true
		l.hist.record(l.hist.stopObserve, now-r.stopAt.Load())
		l.closeListeners()
		if r.stopfd >= 0 && int(r.stopObserved.Add(1)) == len(r.loops) {
			// Every worker has seen the level-triggered stopfd; stop it
			// waking them.
			_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, r.stopfd, nil)
		}
	}
	if !l.quiesced && l.tasks > 0 && now > r.stopAt.Load()+int64(l.cfg.StopGrace) {
		// Offloaded callbacks that did not come back within the grace
		// period are rejected, so the stop ends in bounded time; their
		// results, if they still arrive, are dropped uncounted.
		l.stats.QuiesceTimeouts += uint64(l.tasks)
		l.ledger.Rejected += uint64(l.tasks)
		l.ledger.Abandoned += uint64(l.tasks)
		l.tasks = 0
	}
	if !l.quiesced && l.tasks == 0 {
		l.quiesced = true
		if l.design != OneShot {
			l.table.Range(func(_ slots.Ref, s *source) bool {
				if s.kind == kindConn {
					l.updateInterest(s)
				}
				return true
			})
		}
		r.quiesce(l)
	}
	if r.acked.Load() {
		return r.outPending.Load() <= 0 || now > r.graceDeadline.Load()
	}
	return false
}

// closeListeners closes admission: new connections are refused by the
// kernel. ONESHOT workers share the listeners; there accepted connections
// are closed at once instead, and the listeners close at exit.
func (l *loop) closeListeners() {
	if l.design == OneShot {
		return
	}
	for _, ref := range l.listeners {
		if s, ok := l.table.Get(ref); ok {
			unix.Close(s.fd)
			s.fd = -1
			l.table.Free(ref)
		}
	}
	l.listeners = l.listeners[:0]
}

// sendStopAck queues STOP_ACK with the final ledger on the connection that
// asked for the stop.
func (l *loop) sendStopAck(ref slots.Ref) {
	s, ok := l.table.Get(ref)
	if !ok || s.fd < 0 {
		return // the requester left; the ledger is still in the final stats
	}
	h := l.r.stopHdr.Load()
	l.r.ledgerMu.Lock()
	payload := stopAckPayload(l.r.ledger)
	l.r.ledgerMu.Unlock()
	frame := wire.AppendFrame(nil, wire.KindStopAck, 0, h.Token, h.Seq, h.SendNs, payload)
	l.lendOut(s)
	if err := s.out.Append(frame); err != nil {
		l.stats.HardCapClosed++
		l.closeSource(s)
		return
	}
	s.stopHeld = false
	if l.flush(s) && l.design == OneShot {
		l.rearm(s)
	}
}

// drainIngress takes at most the ingress budget of items. Items left over
// keep the next wait at timeout 0; the LostWakeup mutant forgets them and
// sleeps on an eventfd that was already cleared.
func (l *loop) drainIngress() {
	if d := uint64(l.ingress.Len()); d > l.stats.IngressMaxDepth {
		l.stats.IngressMaxDepth = d
	}
	n, pending := l.ingress.Drain(l.cfg.Budgets.Ingress, l.onMessageFn)
	l.stats.IngressItems += uint64(n)
	l.progress += uint64(n)
	l.ingressPending = pending && !l.cfg.Faults.LostWakeup
	for i, s := range l.touched {
		s.touchedMark = false
		l.flush(s)
		l.touched[i] = nil
	}
	l.touched = l.touched[:0]
}

func (l *loop) onMessage(m message) {
	switch m.kind {
	case msgWake:
	case msgAck:
		l.sendStopAck(slots.Ref(l.r.stopRef.Load()))
		l.r.acked.Store(true)
	case msgResult:
		if l.quiesced {
			l.putTaskBuf(m.buf) // counted as rejected when the stop timed out
			return
		}
		l.tasks--
		ref := m.ref
		if l.cfg.Faults.FdIdentity && int(m.fd) < len(l.fdIndex) {
			ref = l.fdIndex[m.fd] // the mutant: whoever holds that fd number now
		}
		s, ok := l.table.Get(ref)
		if s != nil && ref == m.ref {
			s.tasks--
		}
		if !ok || s.kind != kindConn || s.fd < 0 {
			l.stats.StaleResults++
			l.ledger.Rejected++
			l.ledger.Abandoned++
			l.putTaskBuf(m.buf)
			return
		}
		l.lendOut(s)
		err := s.out.Append(*m.buf)
		l.putTaskBuf(m.buf)
		if err != nil {
			l.ledger.Rejected++
			l.ledger.Abandoned++
			l.stats.HardCapClosed++
			l.closeSource(s)
			return
		}
		l.ledger.Completed++
		l.stats.FramesEchoed++
		if !s.touchedMark {
			s.touchedMark = true
			l.touched = append(l.touched, s)
		}
	}
}

// offload hands a DATA frame's callback to the pool; false when it is full.
func (l *loop) offload(s *source, frame []byte) bool {
	bp := l.getTaskBuf(len(frame))
	copy(*bp, frame)
	t := task{loop: l, ref: s.ref, fd: int32(s.fd), buf: bp, cost: l.sampler.Sample()}
	if !l.r.pool.submit(s.ref.Slot(), t) {
		l.putTaskBuf(bp)
		return false
	}
	l.tasks++
	s.tasks++
	l.stats.TasksOffloaded++
	return true
}

func (l *loop) scheduleTimer(kind uint16, due int64, arg uint64) {
	if l.timersMu != nil {
		l.timersMu.Lock()
		defer l.timersMu.Unlock()
	}
	l.timers.Schedule(timers.Timer{Due: due, Kind: kind, Arg: arg})
}

// onTimerEvent clears the timerfd; ONESHOT workers also run the due timers
// (they share one set) and rearm it.
func (l *loop) onTimerEvent() {
	if l.design != OneShot {
		l.timers.Acknowledge()
		return
	}
	l.timersMu.Lock()
	l.timers.Acknowledge()
	l.now = nanotime()
	l.stats.TimersFired += uint64(l.timers.Expire(l.now, l.onTimerFn))
	l.timersMu.Unlock()
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, l.timers.Fd(), unix.EPOLLIN|unix.EPOLLONESHOT, l.timerRef); err != nil {
		l.r.fail(err)
	}
}

func (l *loop) expireTimers(now int64) {
	if l.design == OneShot {
		return
	}
	l.now = now
	l.stats.TimersFired += uint64(l.timers.Expire(now, l.onTimerFn))
}

func (l *loop) onTimer(t timers.Timer) {
	l.progress++
	switch t.Kind {
	case timerApp:
		l.hist.record(l.hist.timerLate, l.now-t.Due)
		next := t.Due + int64(l.cfg.AppTimer)
		for next <= l.now {
			next += int64(l.cfg.AppTimer)
		}
		l.timers.Schedule(timers.Timer{Due: next, Kind: timerApp})
	case timerAcceptPause:
		ref := slots.Ref(t.Arg)
		s, ok := l.table.Get(ref)
		if !ok || s.fd < 0 {
			return
		}
		l.r.reserveMu.Lock()
		if l.r.reserveFd < 0 {
			if fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				l.r.reserveFd = fd
			}
		}
		l.r.reserveMu.Unlock()
		if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, s.fd, l.listenerEvents(), ref); err != nil {
			l.r.fail(err)
		}
	}
}

// task is one offloaded callback: burn its cost, then post the frame back
// to the owning loop, which drops it if the source's generation changed.
type task struct {
	loop *loop
	ref  slots.Ref
	fd   int32
	buf  *[]byte
	cost time.Duration
}

// pool is the bounded worker pool for offloaded callbacks. A source's tasks
// always go to the same worker, so its echoes come back in order.
type pool struct {
	queues  []chan task
	wg      sync.WaitGroup
	closing atomic.Bool
}

func newPool(workers, queue int) *pool {
	p := &pool{queues: make([]chan task, workers)}
	per := max(1, queue/workers)
	for i := range p.queues {
		p.queues[i] = make(chan task, per)
	}
	return p
}

func (p *pool) start() {
	for _, q := range p.queues {
		p.wg.Add(1)
		go p.work(q)
	}
}

func (p *pool) work(q chan task) {
	defer p.wg.Done()
	for t := range q {
		// Burn the cost in slices so a closing pool (the reactor is exiting
		// after its stop grace) is not held up by a long callback.
		for left := t.cost; left > 0 && !p.closing.Load(); left -= spinSlice {
			cost.Spin(min(left, spinSlice))
		}
		m := message{kind: msgResult, ref: t.ref, fd: t.fd, buf: t.buf}
		for !t.loop.ingress.Push(m) {
			if p.closing.Load() {
				break
			}
			runtime.Gosched() // the loop is behind; it drains every round
		}
	}
}

// spinSlice is how long a worker burns CPU between checks of closing.
const spinSlice = 100 * time.Microsecond

func (p *pool) submit(slot uint32, t task) bool {
	select {
	case p.queues[int(slot)%len(p.queues)] <- t:
		return true
	default:
		return false
	}
}

func (p *pool) stop() {
	p.closing.Store(true)
	for _, q := range p.queues {
		close(q)
	}
	p.wg.Wait()
}

// getTaskBuf takes a buffer for an offloaded frame from the loop's free
// list; buffers come back through putTaskBuf when the result is handled on
// the same loop thread, so the list needs no lock and steady state allocates
// nothing.
func (l *loop) getTaskBuf(n int) *[]byte {
	var bp *[]byte
	if k := len(l.taskBufs); k > 0 {
		bp = l.taskBufs[k-1]
		l.taskBufs = l.taskBufs[:k-1]
	} else {
		bp = new([]byte)
	}
	if cap(*bp) < n {
		*bp = make([]byte, n, max(n, 256))
	}
	*bp = (*bp)[:n]
	return bp
}

func (l *loop) putTaskBuf(bp *[]byte) {
	if bp != nil && cap(*bp) <= 64<<10 && len(l.taskBufs) < l.cfg.WorkerQueue+l.cfg.IngressCap {
		l.taskBufs = append(l.taskBufs, bp)
	}
}
