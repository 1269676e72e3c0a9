//go:build linux

package lt

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/readyq"
)

// New returns an unstarted level-triggered reference reactor configured by
// cfg (see reactors.DefaultConfig); call Start to serve and Stop or a STOP
// frame to end it. Errors name the first bad configuration field.
func New(cfg reactors.Config) (*reactors.Reactor, error) {
	return reactors.New(Design{}, cfg)
}

// Layout is one loop.
func (Design) Layout(*reactors.Config) reactors.Layout { return reactors.Layout{Loops: 1} }

// NewLoop returns the flat policy for l.
func (Design) NewLoop(l *reactors.Loop) reactors.LoopPolicy { return NewFlat(l) }

// NewFlat returns the flat, level-triggered policy of one loop: what lt
// runs, and what prio-thread runs on each of its two loops.
func NewFlat(l *reactors.Loop) reactors.LoopPolicy { return &flat{l: l} }

// flat serves each event at once, in the kernel's batch order.
type flat struct{ l *reactors.Loop }

func (p *flat) ConnFlags() uint32 { return 0 }

func (p *flat) OnEvent(s *reactors.Source, readable bool) {
	if readable {
		p.l.Turn(s, p.l.Ready())
	}
}

// Requeue: the kernel reports unread socket data again, so only frames
// already buffered need the ready queue.
func (p *flat) Requeue(more, buffered bool) bool { return buffered }

func (p *flat) Consume() { p.l.ServeReady(p.l.Ready(), p.l.Config().Budgets.Consume) }

func (p *flat) QueueFor(*reactors.Source) *readyq.Queue { return p.l.Ready() }
