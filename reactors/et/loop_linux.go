//go:build linux

package et

import (
	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/readyq"
)

// New returns an unstarted edge-triggered reference reactor configured by
// cfg (see reactors.DefaultConfig); call Start to serve and Stop or a STOP
// frame to end it. Errors name the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is one loop.
func (Design) Layout(*reactors.Config) reactors.Layout { return reactors.Layout{Loops: 1} }

// NewLoop returns the edge-triggered policy for l.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy {
	p := &edge{l: l, noDrain: l.Config().Faults.NoDrain}
	if p.noDrain {
		l.LimitReads(1) // the mutant: one read per edge
	}
	return p
}

// edge queues every readable source and serves the queue round-robin.
type edge struct {
	l       *reactors.Loop
	noDrain bool // the NoDrain mutant: one read per edge, never requeued
}

func (p *edge) ConnFlags() uint32 { return unix.EPOLLET }

// OnEvent only enqueues: the source became ready no later than the wakeup
// that reported it.
func (p *edge) OnEvent(s *reactors.Source, readable bool) {
	if readable {
		p.l.Enqueue(p.l.Ready(), s, p.l.WokeAt())
	}
}

// Requeue: no new edge will come for data already in the socket, so any
// budget that ended the turn puts the source back on the queue.
func (p *edge) Requeue(more, buffered bool) bool { return more && !p.noDrain }

func (p *edge) Consume() { p.l.ServeReady(p.l.Ready(), p.l.Config().Budgets.Consume) }

func (p *edge) QueueFor(*reactors.Source) *readyq.Queue { return p.l.Ready() }
