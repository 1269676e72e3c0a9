//go:build linux

package reactors

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/wire"
)

// Reactor is a running reference reactor. It is created by New, runs its
// loop threads after Start, stops on a STOP frame or Stop, and reports its
// final statistics from Wait. All methods are safe for concurrent use.
type Reactor struct {
	design Design
	policy Policy
	layout Layout
	cfg    Config
	dist   cost.Dist

	dataAddr, ctlAddr netip.AddrPort

	loops []*Loop
	pool  *pool

	// Stop coordination, shared by every loop.
	stopClaimed   atomic.Bool  // the first STOP request took it
	stopRequested atomic.Bool  // set once the request is fully recorded
	stopAt        atomic.Int64 // CLOCK_MONOTONIC ns the STOP was issued
	stopObserved  atomic.Int32 // loops that have seen the request (shared layout's stopfd)
	quiesced      atomic.Int32 // loops whose ledger is final
	acked         atomic.Bool
	graceDeadline atomic.Int64
	outPending    atomic.Int64 // connections with a non-empty out-queue
	draining      atomic.Bool  // the stop is a drain (Drain: SIGTERM), set before stopRequested
	drainOpen     atomic.Int64 // drain stop: connections shut for writing, not yet closed
	stopfd        int          // shared layout only: level-triggered eventfd written once on stop
	stopfdMu      sync.Mutex   // stopfd is written by requestStop and closed at exit

	ledgerMu    sync.Mutex
	ledger      Ledger
	ledgerReady chan struct{}
	stopOwner   atomic.Pointer[Loop]        // loop that read the STOP frame
	stopRef     atomic.Uint64               // its control connection
	stopHdr     atomic.Pointer[wire.Header] // the STOP frame, answered by STOP_ACK

	reserveMu sync.Mutex
	reserveFd int // spare descriptor released on EMFILE (the reserve-fd trick)

	threadsUp sync.WaitGroup // every loop has recorded its thread id

	startOnce sync.Once
	started   atomic.Bool
	wg        sync.WaitGroup
	done      chan struct{}
	errMu     sync.Mutex
	err       error
	final     Stats
}

// pollerOnce starts the Go runtime's own network poller (an epoll fd and
// an eventfd) before any reactor listens. The runtime creates it lazily,
// at the first timer or pollable file, and dies ("runtime: netpollinit
// failed") if that moment finds the descriptor table full: exactly what a
// reactor shedding load at EMFILE produces (found by conformance case R4:
// `reactorlab serve` crashed when its main goroutine armed its lifetime
// timer after the reactor had already filled the table).
var (
	pollerOnce sync.Once
	pollerErr  error
)

func startRuntimePoller() error {
	pollerOnce.Do(func() {
		r, w, err := os.Pipe() // registering a pipe with the poller starts it
		if err != nil {
			pollerErr = fmt.Errorf("starting the runtime poller: %w", err)
			return
		}
		r.Close()
		w.Close()
	})
	return pollerErr
}

// New checks cfg (Config.Validate, then the design's Check, whose errors it
// returns), opens the listeners, epoll fds, eventfds and timerfds of the
// design's layout, and returns a reactor that serves nothing until Start.
// On error every descriptor opened so far is closed. Callers holding a
// design's name build it through package reactors/designs.
func New(design Policy, cfg Config) (*Reactor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := design.Check(cfg); err != nil {
		return nil, err
	}
	dist, err := cost.Parse(cfg.Callback) // accepted by Validate
	if err != nil {
		return nil, fmt.Errorf("%w: callback: %w", ErrConfig, err)
	}
	sched, err := ParseSched(cfg.ControlSched) // accepted by Validate
	if err != nil {
		return nil, fmt.Errorf("%w: control-sched = %q: %w", ErrConfig, cfg.ControlSched, err)
	}
	if err := probeSched(sched); err != nil {
		return nil, err
	}
	if err := checkLoopCPUs(cfg.LoopCPUs); err != nil {
		return nil, err
	}
	if err := startRuntimePoller(); err != nil {
		return nil, err
	}
	if cfg.Faults.UnboundedOutQueue {
		cfg.OutHigh, cfg.OutLow, cfg.OutCap = 1<<62, 0, 0
	}
	r := &Reactor{design: design.Name(), policy: design, cfg: cfg, dist: dist, stopfd: -1, reserveFd: -1,
		ledgerReady: make(chan struct{}), done: make(chan struct{})}
	r.layout = design.Layout(&r.cfg)
	if err := r.layout.check(&r.cfg); err != nil {
		return nil, fmt.Errorf("design %s: %w", r.design, err)
	}
	if err := r.build(); err != nil {
		r.closeAll()
		return nil, err
	}
	return r, nil
}

// check refuses a layout that breaks Layout's invariants, or a shared one
// given an offload pool: its loops have no ingress for the results to come
// back through (a design with a shared layout refuses workers in Check).
func (lay Layout) check(cfg *Config) error {
	if lay.Loops < 1 || lay.Loops > 256 {
		return fmt.Errorf("layout: %d loops (accepted: 1..256)", lay.Loops)
	}
	if lay.ControlLoop < 0 || lay.ControlLoop >= lay.Loops {
		return fmt.Errorf("layout: control loop %d of %d", lay.ControlLoop, lay.Loops)
	}
	if lay.Shared && cfg.Workers > 0 {
		return fmt.Errorf("%w: workers = %d: a shared layout has no ingress for offloaded results", ErrConfig, cfg.Workers)
	}
	return nil
}

// build opens the reserve descriptor and the listeners, then the layout's
// loops, and hands the data listener to loop 0 and the control listener to
// Layout.ControlLoop.
func (r *Reactor) build() error {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("open reserve fd", err)
	}
	r.reserveFd = fd

	// Each listener fd is owned by exactly one party at a time: here until
	// it is handed to a loop (addListener closes it if registering fails),
	// so every error path closes it once.
	dataFd, dataAddr, err := listenTCP(r.cfg.Listen, 4096)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	r.dataAddr = dataAddr
	ctlFd := -1
	if r.cfg.ControlListen != "" {
		ctlFd, r.ctlAddr, err = listenTCP(r.cfg.ControlListen, 4096)
		if err != nil {
			unix.Close(dataFd)
			return fmt.Errorf("control-listen: %w", err)
		}
	}
	defer func() {
		for _, fd := range []int{dataFd, ctlFd} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	if err := r.buildLoops(); err != nil {
		return err
	}
	// handOff gives fd to loop l as a listener; afterwards it is l's.
	handOff := func(l *Loop, fd *int, control bool) error {
		f := *fd
		*fd = -1
		if f < 0 {
			return nil
		}
		return l.addListener(f, control)
	}
	if err := handOff(r.loops[0], &dataFd, false); err != nil {
		return err
	}
	if err := handOff(r.loops[r.layout.ControlLoop], &ctlFd, true); err != nil {
		return err
	}
	if r.cfg.Workers > 0 {
		r.pool = newPool(r.cfg.Workers, r.cfg.WorkerQueue)
	}
	return nil
}

// buildLoops creates the layout's loops: each with its own epoll fd, or,
// in a shared layout, all on loop 0's, with the level-triggered stop
// eventfd that wakes every one of them for STOP.
func (r *Reactor) buildLoops() error {
	var first *Loop
	for i := range r.layout.Loops {
		l, err := newLoop(r, i, first)
		if err != nil {
			return err
		}
		r.loops = append(r.loops, l)
		if r.layout.Shared && first == nil {
			first = l
		}
	}
	if !r.layout.Shared {
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("eventfd", err)
	}
	r.stopfd = efd
	_, err = first.addSpecial(efd, kindStop, unix.EPOLLIN)
	return err
}

// Design reports which reference design r runs.
func (r *Reactor) Design() Design { return r.design }

// Loops is the number of loop threads r runs (its design's Layout.Loops),
// known from New on: each needs a P of its own once started.
func (r *Reactor) Loops() int { return len(r.loops) }

// Addr is the bound data address; ControlAddr the control address (invalid
// when none was configured).
func (r *Reactor) Addr() netip.AddrPort        { return r.dataAddr }
func (r *Reactor) ControlAddr() netip.AddrPort { return r.ctlAddr }

// Config returns the configuration r runs with (faults applied).
func (r *Reactor) Config() Config { return r.cfg }

// Start runs the loop threads (each locked to its OS thread) and the worker
// pool. It returns at once; a second call does nothing.
func (r *Reactor) Start() {
	r.startOnce.Do(func() {
		r.started.Store(true)
		if r.pool != nil {
			r.pool.start()
		}
		r.threadsUp.Add(len(r.loops))
		for _, l := range r.loops {
			r.wg.Add(1)
			go l.run()
		}
		r.threadsUp.Wait()
		go func() {
			r.wg.Wait()
			if r.pool != nil {
				r.pool.stop()
			}
			r.closeAll()
			r.finish()
			close(r.done)
		}()
	})
}

// LoopThreads returns the OS thread ids of the loop threads (after Start),
// e.g. to pin them or to read their CPU time. Offload workers are
// goroutines, not listed.
func (r *Reactor) LoopThreads() []int {
	tids := make([]int, len(r.loops))
	for i, l := range r.loops {
		tids[i] = int(l.tid.Load())
	}
	return tids
}

// LoopCPU is the CPU time (user + system) the loop threads have used so
// far, live or after exit.
func (r *Reactor) LoopCPU() time.Duration {
	var ns int64
	for _, l := range r.loops {
		if c := l.cpuAtExit.Load(); c > 0 {
			ns += c
		} else if tid := l.tid.Load(); tid != 0 {
			ns += max(threadCPU(int(tid)), 0)
		}
	}
	return time.Duration(ns)
}

// Done is closed when every loop has exited and Wait's result is final.
func (r *Reactor) Done() <-chan struct{} { return r.done }

// Stop closes admission and waits until every accepted request has
// completed or been rejected, then returns the ledger; the reactor then
// drains its out-queues (bounded by Config.StopGrace) and exits. A STOP frame
// and Stop are the same request: whichever comes first wins and later ones
// return the same ledger. Stop on a reactor never started closes it.
func (r *Reactor) Stop() (Ledger, error) {
	if !r.started.Load() {
		r.startOnce.Do(func() {
			r.closeAll()
			r.finish()
			close(r.ledgerReady)
			close(r.done)
		})
		return Ledger{}, nil
	}
	r.requestStop(nanotime(), nil, 0, nil)
	select {
	case <-r.ledgerReady:
	case <-r.done:
	}
	r.ledgerMu.Lock()
	defer r.ledgerMu.Unlock()
	return r.ledger, r.Err()
}

// Wait blocks until the reactor has exited and returns its final statistics
// and the first loop error, if any.
func (r *Reactor) Wait() (Stats, error) {
	<-r.done
	return r.final, r.Err()
}

// Err reports the first error a loop failed with.
func (r *Reactor) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

func (r *Reactor) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	r.requestStop(nanotime(), nil, 0, nil)
}

// Stats returns live counters (each loop's copy is at most about a
// millisecond old) and the ledger so far. Histograms are included once the
// reactor has stopped.
func (r *Reactor) Stats() Stats {
	select {
	case <-r.done:
		return r.final
	default:
	}
	s := Stats{Design: r.design, Loops: len(r.loops)}
	for _, l := range r.loops {
		c, led := l.published()
		s.Counters.add(&c)
		s.Ledger.add(led)
	}
	return s
}

// requestStop is the single entry of a stop, from a frame (by is the loop
// that read it, on connection ref, frame hdr) or from Stop (by nil). The
// first request wins and wakes every loop; it reports whether this one won.
func (r *Reactor) requestStop(at int64, by *Loop, ref slots.Ref, hdr *wire.Header) bool {
	if !r.stopClaimed.CompareAndSwap(false, true) {
		return false
	}
	// Loops act on stopRequested; everything they read with it is stored
	// before it.
	r.stopAt.Store(at)
	if by != nil {
		r.stopRef.Store(uint64(ref))
		r.stopHdr.Store(hdr)
		r.stopOwner.Store(by)
	}
	r.stopRequested.Store(true)
	r.stopfdMu.Lock()
	if r.stopfd >= 0 {
		if err := writeEventfd(r.stopfd); err != nil {
			r.stopfdMu.Unlock()
			r.fail(err)
			r.stopfdMu.Lock()
		}
	}
	r.stopfdMu.Unlock()
	for _, l := range r.loops {
		if l != by && l.ingress != nil {
			l.ingress.Push(message{kind: msgWake})
		}
	}
	return true
}

// quiesce records that loop l's ledger is final. The last loop to quiesce
// completes the stop: it publishes the ledger and has STOP_ACK sent.
func (r *Reactor) quiesce(l *Loop) {
	r.ledgerMu.Lock()
	r.ledger.add(l.ledger)
	r.ledgerMu.Unlock()
	if int(r.quiesced.Add(1)) != len(r.loops) {
		return
	}
	r.graceDeadline.Store(nanotime() + int64(r.cfg.StopGrace))
	close(r.ledgerReady)
	owner := r.stopOwner.Load()
	switch {
	case owner == nil: // Stop(): the ledger is the answer
		r.acked.Store(true)
	case owner == l || r.layout.Shared: // a shared table: any loop can queue it
		l.sendStopAck(slots.Ref(r.stopRef.Load()))
		r.acked.Store(true)
	default:
		if !owner.ingress.Push(message{kind: msgAck}) {
			// The owner's ingress is full: it is busy and will drain it; a
			// lost STOP_ACK would break the contract, so say so.
			r.fail(errors.New("stop: could not hand STOP_ACK to the control loop: ingress full"))
			r.acked.Store(true)
		}
	}
}

func (r *Reactor) finish() {
	s := Stats{Design: r.design, Loops: len(r.loops)}
	merged := newHistograms(false)
	into := merged.byName()
	for _, l := range r.loops {
		s.Counters.add(&l.stats)
		if r.quiesced.Load() == 0 {
			s.Ledger.add(l.ledger)
		}
		s.HistDrops += l.hist.dropped
		for name, h := range l.hist.byName() {
			s.HistDrops += uint64(into[name].Merge(h))
		}
	}
	if r.quiesced.Load() > 0 {
		r.ledgerMu.Lock()
		s.Ledger = r.ledger
		r.ledgerMu.Unlock()
	}
	s.Histograms = map[string]HistSummary{}
	s.Raw = map[string]*hdrhistogram.Snapshot{}
	for name, h := range into {
		s.Histograms[name] = Summarize(h)
		s.Raw[name] = h.Export()
	}
	s.LoopCPUNs = uint64(r.LoopCPU())
	s.LoopSched = r.LoopSched()
	s.LoopThreads = r.LoopPlacement()
	r.final = s
}

// closeAll releases every descriptor of a reactor whose loops never ran.
func (r *Reactor) closeAll() {
	for _, l := range r.loops {
		l.closeResources()
	}
	r.stopfdMu.Lock()
	if r.stopfd >= 0 {
		unix.Close(r.stopfd)
		r.stopfd = -1
	}
	r.stopfdMu.Unlock()
	if r.reserveFd >= 0 {
		unix.Close(r.reserveFd)
		r.reserveFd = -1
	}
}

// stopAckPayload encodes the ledger for STOP_ACK: the wire ledger's fields
// plus abandoned.
func stopAckPayload(l Ledger) []byte {
	b, _ := json.Marshal(l) // a struct of integers always encodes
	return b
}
