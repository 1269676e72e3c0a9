//go:build linux

package reactors

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/slots"
)

// msgKind is what crosses a loop's ingress.
type msgKind uint8

const (
	msgWake   msgKind = iota + 1 // re-check the stop state
	msgResult                    // an offloaded callback finished
	msgAck                       // send STOP_ACK: every loop has quiesced
	msgConn                      // register an accepted connection (mainsub's handoff)
)

type message struct {
	kind msgKind
	twin bool // msgConn: the ServeOnTwoLoops mutant's duplicate
	ref  slots.Ref
	fd   int32
	at   int64   // msgConn: when the acceptor accepted it
	buf  *[]byte // msgResult: the frame to echo, from the pool's buffers
}

// drainIngress takes at most the ingress budget of items. Items left over
// keep the next wait at timeout 0; the LostWakeup mutant forgets them and
// sleeps on an eventfd that was already cleared.
func (l *Loop) drainIngress() {
	l.lastDrain.Store(nanotime())
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

func (l *Loop) onMessage(m message) {
	switch m.kind {
	case msgWake:
	case msgConn:
		l.adoptConn(m)
	case msgAck:
		l.sendStopAck(slots.Ref(l.r.stopRef.Load()))
		l.r.acked.Store(true)
	case msgResult:
		if l.quiesced {
			l.putTaskBuf(m.buf) // counted as rejected when the stop timed out
			return
		}
		if l.tasks > 0 || !l.cfg.Faults.FdIdentityAcrossLoops {
			l.tasks-- // (the mutant delivers other loops' results here: this loop owes them nothing)
		}
		ref := m.ref
		if (l.cfg.Faults.FdIdentity || l.cfg.Faults.FdIdentityAcrossLoops) && int(m.fd) < len(l.fdIndex) {
			ref = l.fdIndex[m.fd] // the mutants: whoever holds that fd number now
		}
		s, ok := l.table.Get(ref)
		if s != nil && ref == m.ref {
			s.tasks--
		}
		if !ok || s.kind != kindConn || s.state == stateClosed {
			l.stats.StaleResults++
			if o := l.r.fdOwner(int(m.fd)); o != nil && o != l {
				l.stats.StaleResultsFdElsewhere++
			}
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
func (l *Loop) offload(s *Source, frame []byte) bool {
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

// task is one offloaded callback: burn its cost, then post the frame back
// to the owning loop, which drops it if the source's generation changed.
type task struct {
	loop *Loop
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
		to := t.loop
		if to.cfg.Faults.FdIdentityAcrossLoops {
			if o := to.r.fdOwner(int(t.fd)); o != nil && o.ingress != nil {
				to = o // the mutant: to whichever loop holds that fd number now
			}
		}
		for !to.ingress.Push(m) {
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
func (l *Loop) getTaskBuf(n int) *[]byte {
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

func (l *Loop) putTaskBuf(bp *[]byte) {
	if bp != nil && cap(*bp) <= 64<<10 && len(l.taskBufs) < l.cfg.WorkerQueue+l.cfg.IngressCap {
		l.taskBufs = append(l.taskBufs, bp)
	}
}
