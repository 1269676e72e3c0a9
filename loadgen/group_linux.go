//go:build linux

package loadgen

// The loops of one run: building them, starting them at one instant,
// what they share while they run (cancellation, the STOP probe), and
// progress reports merged across them.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/internal/epollsys"
)

// group is a run's loops and what they share. Each loop is used only by
// its own goroutine while the loops run; the group's atomics are the only
// state they share, and the coordinator reads the loops only before they
// start and after every one has returned.
type group struct {
	cfg      Config
	loops    []*loop
	stopLoop *loop // the loop with the STOP connection (nil without Config.StopAt)

	// The start of sending, common to every loop (set before they start).
	t0        int64
	startWall time.Time

	// The hot lead (Config.HotLead): each loop tells joined once how its
	// part went (lead); once every loop has connected its sources,
	// schedStart (ns since t0) is set and then measuring, and the loops
	// are woken. Without a lead schedStart is 0.
	joined     chan error
	measuring  atomic.Bool
	schedStart int64

	interrupted atomic.Bool // the run's context ended
	aborted     atomic.Bool // a loop failed: the others stop
	// stopSent and stopAcked are the STOP probe's state as the stop loop
	// sets it: a loop reads them when the target closes one of its
	// connections (after STOP, or after STOP_ACK, the close is the STOP's).
	stopSent  atomic.Bool
	stopAcked atomic.Bool

	ru0, ru1 unix.Rusage // the process's CPU at the start of sending and after the last loop ended

	// tokens maps every token of a run of several loops to its source, so
	// that a frame of one loop's source delivered on another loop's is
	// known as ours (delivered to the wrong connection), not a stranger's.
	// Written when a source (re)connects, read on a foreign frame only.
	tokenMu sync.Mutex
	tokens  map[uint64]*conn
}

// addToken records token as c's.
func (g *group) addToken(token uint64, c *conn) {
	g.tokenMu.Lock()
	defer g.tokenMu.Unlock()
	if g.tokens == nil {
		g.tokens = map[uint64]*conn{}
	}
	g.tokens[token] = c
}

// owner returns the source of any loop that used token, or nil.
func (g *group) owner(token uint64) *conn {
	g.tokenMu.Lock()
	defer g.tokenMu.Unlock()
	return g.tokens[token]
}

// newGroup builds cfg.Loops loops, each with its share of the sources
// (newLoopShare) and a token prefix of its own.
func newGroup(cfg Config, fs []faults.WireFault, dataSA, ctlSA unix.Sockaddr) (*group, error) {
	g := &group{cfg: cfg, joined: make(chan error, cfg.Loops)}
	base := rand.Uint32()
	for i := range cfg.Loops {
		l, err := newLoopShare(g, i, cfg.Loops, fs, ownSockaddr(dataSA), ownSockaddr(ctlSA), base+2*uint32(i)) // distinct once made odd
		if err != nil {
			g.closeAll()
			return nil, fmt.Errorf("loadgen: loop %d: %w", i, err)
		}
		g.loops = append(g.loops, l)
		if l.stopConn != nil {
			g.stopLoop = l
		}
	}
	return g, nil
}

// ownSockaddr returns a copy of sa for one loop: x/sys/unix encodes a
// Sockaddr into a buffer inside it at every connect, so loops connecting
// at once must not share one.
func ownSockaddr(sa unix.Sockaddr) unix.Sockaddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		c := *a
		return &c
	case *unix.SockaddrInet6:
		c := *a
		return &c
	}
	return sa // resolve makes no other kind
}

// closeAll closes every loop's descriptors.
func (g *group) closeAll() {
	for _, l := range g.loops {
		l.closeAll()
	}
}

// wakeAll wakes every loop but except (nil: every loop) through its
// eventfd; each then reads the group's state (onWake).
func (g *group) wakeAll(except *loop) {
	for _, l := range g.loops {
		if l == except {
			continue
		}
		if w := l.waker.Load(); w != nil {
			_ = w.Wake() // it can fail only once the waker is closed, after the loops ended
		} else if l.efd >= 0 {
			_ = epollsys.WriteEventfd(l.efd) // it can fail only once efd is closed, after the loops ended
		}
	}
}

// run connects every loop's sources (with a hot lead, the hot ones
// first: see lead), each loop on its own locked thread, starts them
// sending at one instant once all are connected, and waits for every loop
// to end; then it settles what is outstanding (finish).
// A loop that fails stops the others; the error is the first failure.
func (g *group) run(ctx context.Context) error {
	n := len(g.loops)
	connected := make(chan error, n)
	start := make(chan struct{})
	runErrs := make([]error, n)
	var wg sync.WaitGroup
	for i, l := range g.loops {
		wg.Go(func() {
			// Never unlocked: the thread may be pinned, and is discarded
			// when the goroutine ends.
			runtime.LockOSThread()
			l.tid = unix.Gettid()
			defer l.closeRing() // on the ring's own thread
			err := l.pin()
			if err == nil && g.cfg.Engine == EngineUring {
				err = l.openRing()
			}
			if err == nil {
				err = l.connectAll()
			}
			if err != nil {
				g.abort()
			}
			connected <- err
			<-start
			if err != nil || g.aborted.Load() {
				return
			}
			if runErrs[i] = l.run(); runErrs[i] != nil {
				g.abort()
			}
			if l.progress != nil {
				l.progress <- loopProgress{loop: i, ended: true} // the merger reads until every loop has ended
			}
		})
	}
	var first error
	for range n {
		if err := <-connected; err != nil && first == nil {
			first = err
		}
	}
	if first == nil && g.interrupted.Load() {
		first = fmt.Errorf("loadgen: interrupted while connecting: %w", context.Cause(ctx))
	}
	if first != nil {
		g.aborted.Store(true)
	} else {
		g.startWall = time.Now()
		g.t0 = epollsys.Nanotime()
		_ = unix.Getrusage(unix.RUSAGE_SELF, &g.ru0)
	}
	close(start)
	if first == nil && g.cfg.HotLead > 0 {
		first = g.awaitLead(ctx)
	}
	wg.Wait()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &g.ru1)
	if first != nil {
		return first
	}
	if err := errors.Join(runErrs...); err != nil {
		return err
	}
	acked := g.stopAcked.Load()
	for _, l := range g.loops {
		// Every loop settles by the STOP's final state: the stop loop may
		// have had STOP_ACK after another loop ended.
		l.stopAcked = l.stopAcked || acked
		l.finish()
	}
	return nil
}

// abort stops every loop: a loop failed.
func (g *group) abort() {
	g.aborted.Store(true)
	g.wakeAll(nil)
}

// pin pins the loop's thread (the calling one) to its CPU of
// Config.LoopCPUs and reads the mask back.
func (l *loop) pin() error {
	cpus := l.cfg.LoopCPUs
	if len(cpus) == 0 {
		return nil
	}
	cpu := cpus[l.index%len(cpus)]
	var set, got unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("loadgen: loop %d: pin its thread to CPU %d (loop-cpus): %w", l.index, cpu, os.NewSyscallError("sched_setaffinity", err))
	}
	if err := unix.SchedGetaffinity(0, &got); err != nil {
		return fmt.Errorf("loadgen: loop %d: pin its thread to CPU %d (loop-cpus): %w", l.index, cpu, os.NewSyscallError("sched_getaffinity", err))
	}
	if got != set {
		return fmt.Errorf("loadgen: loop %d: pin its thread to CPU %d (loop-cpus): the kernel kept %d CPUs", l.index, cpu, got.Count())
	}
	l.cpu = cpu
	return nil
}

// onWake reads what the group has to say when the loop's eventfd fired:
// the run was interrupted or another loop failed (the loop ends), or the
// target acknowledged our STOP on the stop loop (this loop stops sending,
// as the stop loop did).
func (l *loop) onWake() {
	g := l.g
	if g.interrupted.Load() || g.aborted.Load() {
		l.interrupted = true
	}
	if g.stopAcked.Load() && !l.stopAcked {
		l.stopAcked = true
		if l.phase == phaseSending {
			l.endSending()
		}
	}
}

// targetAckedStop reports whether the target has acknowledged our STOP,
// on this loop or the stop loop.
func (l *loop) targetAckedStop() bool { return l.stopAcked || l.g.stopAcked.Load() }

// stopWasSent reports whether our STOP has been written (or is about to
// be), on this loop or the stop loop.
func (l *loop) stopWasSent() bool { return l.stopSent || l.g.stopSent.Load() }

// conns returns every loop's sources in the run's order (hot, steady,
// control: their positions).
func (g *group) conns() []*conn {
	type placed struct {
		pos int
		c   *conn
	}
	var all []placed
	for _, l := range g.loops {
		for i, c := range l.conns {
			all = append(all, placed{l.positions[i], c})
		}
	}
	slices.SortFunc(all, func(a, b placed) int { return a.pos - b.pos })
	out := make([]*conn, len(all))
	for i, p := range all {
		out[i] = p.c
	}
	return out
}

// loopProgress is one loop's report at an interval boundary, or its
// last word: it has ended and reports no more.
type loopProgress struct {
	loop     int
	boundary int64 // the interval boundary just passed, ns since the start
	p        Progress
	ended    bool
}

// progressMerger sums the loops' reports of each interval boundary into
// one Progress, sent (without blocking) once every loop still running has
// reported that boundary; a loop that has ended counts with its last
// report (its counts, at no rate), so the sums never go back. A
// boundary a running loop skipped (it was late by more than an interval,
// or the merger was behind) is never sent; it is forgotten once a later
// one is.
type progressMerger struct {
	n      int
	in     chan loopProgress
	out    chan<- Progress
	done   chan struct{} // closed by close
	exited chan struct{} // closed when run returns
}

func newProgressMerger(n int, out chan<- Progress) *progressMerger {
	return &progressMerger{n: n, in: make(chan loopProgress, 8*n), out: out, done: make(chan struct{}), exited: make(chan struct{})}
}

// boundarySum is the reports of one boundary so far.
type boundarySum struct {
	from []bool // which loops reported it
	p    Progress
}

// run merges until close; it is the merger's only goroutine.
func (m *progressMerger) run() {
	defer close(m.exited)
	pending := map[int64]*boundarySum{}
	ended := make([]bool, m.n)
	last := make([]Progress, m.n) // each loop's latest report
	for {
		var lp loopProgress
		select {
		case lp = <-m.in:
		case <-m.done:
			return
		}
		if lp.ended {
			ended[lp.loop] = true
		} else {
			q := pending[lp.boundary]
			if q == nil {
				q = &boundarySum{from: make([]bool, m.n), p: Progress{Measuring: true}}
				pending[lp.boundary] = q
			}
			q.from[lp.loop] = true
			q.p = q.p.plus(lp.p)
			last[lp.loop] = lp.p
		}
		m.sendComplete(pending, ended, last)
	}
}

// sendComplete sends the latest boundary every running loop has reported
// (if any), the ended loops' last reports added in, and forgets it and
// every earlier one.
func (m *progressMerger) sendComplete(pending map[int64]*boundarySum, ended []bool, last []Progress) {
	latest, found := int64(0), false
	for b, q := range pending {
		complete := true
		for i, from := range q.from {
			complete = complete && (from || ended[i])
		}
		if complete && (!found || b > latest) {
			latest, found = b, true
		}
	}
	if !found {
		return
	}
	q := pending[latest]
	p := q.p
	for i, from := range q.from {
		if !from {
			gone := last[i] // an ended loop's: its counts stand, it sends no more
			gone.Rate, gone.DataP99, gone.ControlP99 = 0, 0, 0
			p = p.plus(gone)
		}
	}
	for b := range pending {
		if b <= latest {
			delete(pending, b)
		}
	}
	select {
	case m.out <- p:
	default: // the callback is still busy with the previous one
	}
}

// close ends run and waits for it to return: out is no longer used. Call
// it once the loops have ended.
func (m *progressMerger) close() {
	close(m.done)
	<-m.exited
}

// plus adds one loop's report to p, a sum of reports of the same
// boundary: counts and rates add up; Elapsed is the latest, Measuring
// holds when it holds for every loop, and the p99s are the largest of the
// loops' (a percentile of the merged interval is not kept during the run).
func (p Progress) plus(o Progress) Progress {
	p.Elapsed = max(p.Elapsed, o.Elapsed)
	p.Measuring = p.Measuring && o.Measuring
	p.Sent += o.Sent
	p.Echoed += o.Echoed
	p.Rate += o.Rate
	p.ControlSent += o.ControlSent
	p.ControlEchoed += o.ControlEchoed
	p.DataP99 = max(p.DataP99, o.DataP99)
	p.ControlP99 = max(p.ControlP99, o.ControlP99)
	return p
}
