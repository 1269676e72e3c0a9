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
	design DesignName
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

	// sharedListener is the ListenerInEverySet listener: every loop holds
	// it in its set until it sees the stop; the last to let go closes it.
	sharedListener struct {
		fd   int
		refs atomic.Int32
	}
	assign   AssignMode     // Config.Assign, parsed
	nextSub  atomic.Uint32  // mainsub round-robin cursor (the acceptor's)
	fdOwners []atomic.Int32 // fd number → id+1 of the loop that registered it last (0: none)
	startNs  atomic.Int64   // when Start ran the loops (busy fractions' origin)

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
	r.sharedListener.fd = -1
	r.assign, _ = ParseAssign(cfg.Assign) // accepted by Validate
	r.fdOwners = make([]atomic.Int32, fdOwnerSlots())
	r.layout = design.Layout(&r.cfg)
	if err := r.layout.check(&r.cfg); err != nil {
		return nil, fmt.Errorf("design %s: %w", r.design, err)
	}
	if r.layout.Completion {
		if err := ProbeCompletion(); err != nil {
			return nil, fmt.Errorf("design %s: %w", r.design, err)
		}
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
	if lay.Shared && lay.Listener != ListenerOnFirst {
		return fmt.Errorf("layout: a shared layout keeps its listener on loop 0 (listener %s)", lay.Listener)
	}
	if lay.Completion && (lay.Shared || lay.Listener == ListenerInEverySet) {
		return fmt.Errorf("layout: a completion layout has a ring per loop, each listener accepted on one ring (shared %v, listener %s)", lay.Shared, lay.Listener)
	}
	if lay.Listener == ListenerHandoff && (lay.Loops < 2 || lay.ControlLoop != 0) {
		return fmt.Errorf("layout: a handoff layout needs an acceptor (loop 0, also the control loop) and a sub-loop (%d loops, control loop %d)", lay.Loops, lay.ControlLoop)
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
	dataFds, dataAddr, err := r.listenData()
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	r.dataAddr = dataAddr
	ctlFd := -1
	if r.cfg.ControlListen != "" {
		ctlFd, r.ctlAddr, err = listenTCP(r.cfg.ControlListen, 4096, false)
		if err != nil {
			closeFds(dataFds)
			return fmt.Errorf("control-listen: %w", err)
		}
	}
	defer func() {
		closeFds(dataFds)
		if ctlFd >= 0 {
			unix.Close(ctlFd)
		}
	}()
	if err := r.buildLoops(); err != nil {
		return err
	}
	if err := r.handListeners(dataFds); err != nil {
		return err
	}
	if ctlFd >= 0 {
		fd := ctlFd
		ctlFd = -1
		if err := r.loops[r.layout.ControlLoop].addListener(fd, true); err != nil {
			return err
		}
	}
	if r.cfg.Workers > 0 {
		r.pool = newPool(r.cfg.Workers, r.cfg.WorkerQueue)
	}
	return nil
}

// listenData opens the data listener (ListenerPerLoop: one per loop, all
// SO_REUSEPORT on the first one's address) and returns the bound address.
func (r *Reactor) listenData() ([]int, netip.AddrPort, error) {
	if r.layout.Listener != ListenerPerLoop {
		fd, addr, err := listenTCP(r.cfg.Listen, 4096, false)
		if err != nil {
			return nil, addr, err
		}
		return []int{fd}, addr, nil
	}
	fds := make([]int, 0, r.layout.Loops)
	fd, addr, err := listenTCP(r.cfg.Listen, 4096, true)
	if err != nil {
		return nil, addr, err
	}
	fds = append(fds, fd)
	for len(fds) < r.layout.Loops {
		fd, _, err := listenTCP(addr.String(), 4096, true)
		if err != nil {
			closeFds(fds)
			return nil, addr, fmt.Errorf("listener %d of %d on %s: %w", len(fds)+1, r.layout.Loops, addr, err)
		}
		fds = append(fds, fd)
	}
	return fds, addr, nil
}

// handListeners gives the data listeners to the loops as the layout
// spreads them; each fd handed is set to -1 in fds (it is the loop's).
func (r *Reactor) handListeners(fds []int) error {
	take := func(i int) int {
		fd := fds[i]
		fds[i] = -1
		return fd
	}
	spread := r.layout.Listener
	if spread == ListenerHandoff && r.cfg.Faults.NoAcceptCoordination {
		spread = ListenerInEverySet // the mutant: the sub-loops watch the acceptor's listener too
	}
	switch spread {
	case ListenerPerLoop:
		for i, l := range r.loops {
			if err := l.addListener(take(i), false); err != nil {
				return err
			}
		}
		return nil
	case ListenerInEverySet:
		fd := take(0)
		r.sharedListener.fd = fd
		r.sharedListener.refs.Store(int32(len(r.loops)))
		for i, l := range r.loops {
			if err := l.addSharedListener(fd); err != nil {
				// Loops 0..i-1 hold it; the reactor's exit closes it.
				r.sharedListener.refs.Store(int32(i))
				if i == 0 {
					unix.Close(fd)
				}
				return err
			}
		}
		return nil
	}
	return r.loops[0].addListener(take(0), false)
}

// releaseSharedListener is a loop letting go of the ListenerInEverySet
// listener (it has left its set); the last one closes it.
func (r *Reactor) releaseSharedListener() {
	if r.sharedListener.refs.Add(-1) == 0 {
		unix.Close(r.sharedListener.fd)
		r.sharedListener.fd = -1
	}
}

// fdOwnerSlots sizes Reactor.fdOwners: the descriptor limit, at most 1<<20.
func fdOwnerSlots() int {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 1 << 16
	}
	return int(min(rl.Cur, 1<<20))
}

// noteFdOwner records that loop l registered a connection on fd.
func (r *Reactor) noteFdOwner(fd int, l *Loop) {
	if fd < len(r.fdOwners) {
		r.fdOwners[fd].Store(int32(l.id + 1))
	}
}

// fdOwner is the loop that last registered a connection on fd, or nil.
func (r *Reactor) fdOwner(fd int) *Loop {
	if fd < 0 || fd >= len(r.fdOwners) {
		return nil
	}
	if id := r.fdOwners[fd].Load(); id > 0 {
		return r.loops[id-1]
	}
	return nil
}

func closeFds(fds []int) {
	for i, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
			fds[i] = -1
		}
	}
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
func (r *Reactor) Design() DesignName { return r.design }

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
		r.startNs.Store(nanotime())
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
	if !r.requestStop(nanotime(), nil, 0, nil) {
		r.wakeLoops(nil) // a STOP frame won: make sure every loop sees it
	}
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
	now := nanotime()
	for _, l := range r.loops {
		c, led := l.published()
		s.Counters.add(&c)
		s.Ledger.add(led)
		s.PerLoop = append(s.PerLoop, l.loopStats(c, now))
	}
	s.Imbalance = ImbalanceOf(s.PerLoop)
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
	if by == nil || !r.cfg.Faults.StopWakesOneLoop {
		r.wakeLoops(by)
	}
	return true
}

// wakeLoops wakes every loop but by (which is awake) to look at the stop
// state. The StopWakesOneLoop mutant skips it for a STOP frame.
func (r *Reactor) wakeLoops(by *Loop) {
	for _, l := range r.loops {
		if l != by && l.ingress != nil {
			l.ingress.Push(message{kind: msgWake})
		}
	}
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
	now := nanotime()
	for _, l := range r.loops {
		s.PerLoop = append(s.PerLoop, l.loopStats(l.stats, now))
	}
	s.Imbalance = ImbalanceOf(s.PerLoop)
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
	if r.sharedListener.fd >= 0 && r.sharedListener.refs.Load() > 0 {
		unix.Close(r.sharedListener.fd) // loops that never saw a stop still held it
		r.sharedListener.fd = -1
	}
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
