//go:build linux

package prio

import (
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/readyq"
)

// New returns an unstarted single-loop priority reference reactor
// configured by cfg (see reactors.DefaultConfig); call Start to serve and
// Stop or a STOP frame to end it. Errors name the first bad configuration
// field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is one loop.
func (Design) Layout(*reactors.Config) reactors.Layout { return reactors.Layout{Loops: 1} }

// NewLoop returns the two-bucket policy for l.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy {
	return &buckets{l: l, control: l.NewReadyQueue(), dataBudget: l.Config().PrioDataBudget}
}

// buckets serves control first, then data under a time budget.
type buckets struct {
	l          *reactors.Loop
	control    *readyq.Queue // control sources with work left: the control bucket
	dataBudget time.Duration
}

func (p *buckets) ConnFlags() uint32 { return 0 }

// OnEvent serves a control connection at once and queues a data one for
// the data bucket.
func (p *buckets) OnEvent(s *reactors.Source, readable bool) {
	if !readable {
		return
	}
	if s.Control() {
		p.l.Turn(s, p.control)
		return
	}
	p.l.Enqueue(p.l.Ready(), s, p.l.WokeAt())
}

// Requeue: level-triggered, so only frames already buffered need a queue.
func (p *buckets) Requeue(more, buffered bool) bool { return buffered }

// Consume runs the control bucket (every source queued there when it
// starts), then the data bucket: the sources queued at its start, until
// the data budget has passed. The clock is read after every data turn and,
// within one, every ClockEvery frames.
func (p *buckets) Consume() {
	for n := p.control.Len(); n > 0; n-- {
		s, ok := p.l.Pop(p.control)
		if !ok {
			break
		}
		p.l.Turn(s, p.control)
	}
	q := p.l.Ready()
	n := q.Len()
	if n == 0 {
		return
	}
	p.l.SetDeadline(p.dataBudget)
	for served := 0; served < n; served++ {
		s, ok := p.l.NextReady(q)
		if !ok || !p.serveData(s, q) {
			break
		}
	}
	p.l.ClearDeadline()
}

// serveData gives data source s one turn and reports whether the data
// bucket may go on.
func (p *buckets) serveData(s *reactors.Source, q *readyq.Queue) bool {
	p.l.Turn(s, q)
	return !p.l.PastDeadline()
}

func (p *buckets) QueueFor(s *reactors.Source) *readyq.Queue {
	if s.Control() {
		return p.control
	}
	return p.l.Ready()
}
