//go:build linux

package oneshot

import (
	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/readyq"
)

// New returns an unstarted EPOLLONESHOT reference reactor configured by cfg
// (see reactors.DefaultConfig); call Start to serve and Stop or a STOP
// frame to end it. Errors name the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is Config.Threads workers on one shared epoll fd.
func (Design) Layout(cfg *reactors.Config) reactors.Layout {
	return reactors.Layout{Loops: cfg.Threads, Shared: true}
}

// NewLoop returns the policy of one worker.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy {
	return &worker{l: l, missedEvery: l.Config().Faults.MissedRearmEvery}
}

// worker owns a source from the event that woke it until it rearms it.
type worker struct {
	l           *reactors.Loop
	turns       int // rearms due since start, for the mutant
	missedEvery int // the MissedRearmEvery mutant: skip every Nth rearm (0: off)
}

func (p *worker) ConnFlags() uint32 { return unix.EPOLLONESHOT }

// OnEvent serves s at once: it is this worker's until rearmed. Work left
// after the turn stays on this worker's ready queue, unarmed.
func (p *worker) OnEvent(s *reactors.Source, readable bool) {
	if readable && p.l.Turn(s, p.l.Ready()) {
		return
	}
	if p.l.Live(s) {
		p.Rearm(s)
	}
}

// Requeue: the rearm lets the kernel report unread socket data again, so
// only frames already buffered need the ready queue.
func (p *worker) Requeue(more, buffered bool) bool { return buffered }

// Consume serves up to Budgets.Consume sources of this worker's queue and
// rearms each whose turn left nothing queued.
func (p *worker) Consume() {
	q := p.l.Ready()
	for served := 0; served < p.l.Config().Budgets.Consume; served++ {
		s, ok := p.l.NextReady(q)
		if !ok {
			return
		}
		if !p.l.Turn(s, q) && p.l.Live(s) {
			p.Rearm(s)
		}
	}
}

func (p *worker) QueueFor(*reactors.Source) *readyq.Queue { return p.l.Ready() }

// Rearm re-registers s after its turn: the application, not the kernel,
// decides when it may fire again. A source still queued for another turn,
// or held for STOP_ACK, stays this worker's. The MissedRearmEvery mutant
// skips every Nth rearm, which silences that connection for good.
func (p *worker) Rearm(s *reactors.Source) {
	if s.Held() || p.l.Ready().Queued(s.Ref()) {
		return
	}
	p.turns++
	if p.missedEvery > 0 && p.turns%p.missedEvery == 0 {
		p.l.Counters().MissedRearms++
		return
	}
	p.l.RearmOneShot(s)
}
