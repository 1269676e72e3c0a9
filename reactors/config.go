package reactors

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/reactorlab/reactorlab/reactors/cost"
)

// DesignName names a reference reactor design (a Design's Name). The zero
// value is not a design. The registry (package reactors/designs: Names,
// Parse) lists the designs there are; the constants below name the eleven
// reference designs for code that must refer to one (the mutant table,
// tests).
type DesignName string

// The reference designs' names. Each design is a package of its own
// (reactors/lt, et, oneshot, prio, priothread, mainsub, reuseport, shared,
// uring, uringreuseport, uringmainsub) that documents it.
const (
	LT         DesignName = "lt"
	ET         DesignName = "et"
	OneShot    DesignName = "oneshot"
	Prio       DesignName = "prio"
	PrioThread DesignName = "prio-thread"
	// MainSub is one acceptor loop handing each accepted connection to one
	// of Config.Loops sub-loops through that loop's ingress.
	MainSub DesignName = "mainsub"
	// ReusePort is Config.Loops loops, each with its own SO_REUSEPORT
	// listener on the data address (the kernel's flow hash picks the loop).
	ReusePort DesignName = "reuseport"
	// SharedListener is Config.Loops loops with one data listener in every
	// loop's epoll set, registered EPOLLEXCLUSIVE unless Config.Exclusive
	// is "off".
	SharedListener DesignName = "shared"
	// Uring is the proactor: one loop serving its connections through an
	// io_uring (multishot accept, multishot recv into a provided buffer
	// ring, sends of the out-queue), blocking in io_uring_enter.
	Uring DesignName = "uring"
	// UringReusePort is reuseport's layout on the completion path:
	// Config.Loops loops, each with its own io_uring, provided buffer ring
	// and SO_REUSEPORT listener.
	UringReusePort DesignName = "uring-reuseport"
	// UringMainSub is mainsub's layout on the completion path: an acceptor
	// loop handing each accepted connection through a sub-loop's ingress to
	// one of Config.Loops sub-loops, every loop with its own io_uring and
	// provided buffer ring.
	UringMainSub DesignName = "uring-mainsub"
)

// TimerMode selects how the owner loop wakes for timers.
type TimerMode string

// Timer modes: a periodic timerfd tick, or a one-shot timerfd armed to the
// nearest deadline (no idle wakeups while nothing is due).
const (
	TimerPeriodic TimerMode = "periodic"
	TimerDeadline TimerMode = "deadline"
)

// WaitMode selects how a loop waits when it has no ready work.
type WaitMode string

// UrgentMode selects whether data connections take TCP urgent data.
type UrgentMode string

// Urgent modes: off (the default: EPOLLPRI is not asked for, an urgent
// byte is never read), or oob: data connections subscribe EPOLLPRI and
// each urgent byte (MSG_OOB, out of line) is read before the
// connection's in-band batch and answered with an urgent byte of the same
// value (see urgent_linux.go for what TCP urgent data is and is not).
const (
	UrgentOff UrgentMode = "off"
	UrgentOOB UrgentMode = "oob"
)

// StatsMode switches the loops' latency histograms.
type StatsMode string

// Stats modes. StatsOn records the round, ready-queue, rotation,
// timer-lateness and STOP-observation histograms; StatsOff records none of
// them and skips the clock reads only they need (one per round and one per
// source that becomes ready), so that BenchmarkStatsCost can measure what
// the instrumentation costs. Counters and the ledger are kept either way:
// they are increments of the loop's own fields.
const (
	StatsOn  StatsMode = "on"
	StatsOff StatsMode = "off"
)

// Wait modes. WaitPollFirst makes a non-blocking epoll_wait (a raw syscall,
// no runtime bookkeeping) before the blocking one, which goes through the
// runtime's syscall path so the thread's P can be handed off while it
// sleeps; under load the first call usually returns events and the
// hand-off is skipped. WaitBlock calls the blocking epoll_wait directly. The
// default is WaitPollFirst; BenchmarkEcho64Wait compares the two.
const (
	WaitPollFirst WaitMode = "poll-first"
	WaitBlock     WaitMode = "block"
)

// Budgets bound the work of one round. Count budgets become time bounds only
// when each item's cost is bounded: round ≤ C_fixed + Σ B_i × C_i.
type Budgets struct {
	// Ingress is the number of cross-thread items drained per round (default 64).
	Ingress int
	// Input is the number of frames served per source turn (default 32).
	Input int
	// Consume is the number of ready sources served per round before the loop
	// returns to STOP, ingress and timers (default 8).
	Consume int
	// Bytes is the number of bytes read per source turn (64 KiB).
	Bytes int
	// Time bounds one source turn; checked every ClockEvery frames, since a
	// running callback cannot be pre-empted. 0 disables it.
	Time time.Duration
	// Accept is the number of connections accepted per listener turn.
	Accept int
	// ClockEvery is how many frames pass between clock reads when a time
	// budget is in force (default 16).
	ClockEvery int
}

// DefaultBudgets returns the default budgets, as documented on each field.
func DefaultBudgets() Budgets {
	return Budgets{Ingress: 64, Input: 32, Consume: 8, Bytes: 64 << 10, Time: time.Millisecond, Accept: 64, ClockEvery: 16}
}

// Config configures a reference reactor. DefaultConfig gives every default;
// Validate names the first bad field and its accepted range.
type Config struct {
	// Listen is the data address, ControlListen the control address
	// ("host:port", port 0 picks a free one). ControlListen may be empty:
	// then STOP is only available through Reactor.Stop.
	Listen, ControlListen string
	Budgets               Budgets
	// OutHigh/OutLow are the out-queue watermarks: above High the source is
	// not read until the queue drains to Low. OutCap closes the connection.
	OutHigh, OutLow, OutCap int
	// MaxFrame is the largest whole frame accepted (header included).
	MaxFrame int
	// Timer selects periodic or deadline timers; Tick is the periodic
	// interval (checked whatever the mode). The default is deadline: a
	// production loop does not wake every tick with nothing due (in
	// ping-pong, lt's 1 ms tick cost ~3 µs of server CPU per frame).
	Timer TimerMode
	Tick  time.Duration
	// AppTimer, when positive, runs a recurring application timer at this
	// interval on every loop; its lateness is the timer-deviation histogram.
	AppTimer time.Duration
	// Callback is the CPU cost of each DATA frame, as cost.Parse accepts it.
	Callback string
	// Workers > 0 offloads callbacks to a bounded pool of that many workers;
	// results return to the owning loop through ingress. 0 runs them inline.
	Workers int
	// WorkerQueue bounds the tasks waiting for the pool.
	WorkerQueue int
	// IngressCap bounds each loop's ingress queue.
	IngressCap int
	// Threads is the number of ONESHOT worker threads on the one epoll fd.
	Threads int
	// Loops is the number of data loops of a multi-loop design (mainsub:
	// its sub-loops, beside the acceptor loop; reuseport, shared: every
	// loop), 1..256; 0 (the default) is DefaultLoops(). A one-loop design
	// refuses a value above 1 (its Check).
	Loops int
	// Assign is how mainsub's acceptor picks the sub-loop of each accepted
	// connection, as ParseAssign reads it: "round-robin" (the default,
	// also ""), "least-conns" or "least-loaded". Other designs refuse a
	// value: the kernel (reuseport) or whichever loop accepts (shared)
	// assigns there.
	Assign string
	// Exclusive is whether the shared design registers its listener
	// EPOLLEXCLUSIVE in every loop's set: "on" (the default, also "") or
	// "off" (every loop waiting on the listener wakes for each
	// connection: the thundering herd). Other designs refuse "off".
	Exclusive string
	// PrioDataBudget bounds the data bucket per round of the prio design.
	PrioDataBudget time.Duration
	// MaxConns is the slot table capacity (connections per reactor).
	MaxConns int
	// MaxEvents is the epoll_wait batch size.
	MaxEvents int
	// StopGrace bounds how long out-queues may take to drain after STOP_ACK.
	StopGrace time.Duration
	// ControlSched is the scheduling class of the control loop's thread
	// (Layout.ControlLoop: prio-thread's control loop; the only loop of a
	// one-loop design), as ParseSched reads it: "other" (the default: the
	// process's class), "nice:N", "fifo:P", "rr:P". It is set by the
	// locked thread on itself; New refuses a class the process may not
	// grant (a real-time class without CAP_SYS_NICE or RLIMIT_RTPRIO).
	ControlSched string
	// RTHold bounds how long a control loop in a real-time class may run
	// without blocking: once it has been busy that long (checked after
	// each consume pass and each dispatched batch), it sleeps as long as
	// it was busy, so the threads it shares a CPU with run and a busy
	// real-time loop takes at most half of it. Default 2 ms; 100µs..1s.
	RTHold time.Duration
	// LoopCPUs, when not empty, pins each loop's thread to one CPU: loop i
	// (in Layout order) to LoopCPUs[i mod len(LoopCPUs)], set by the locked
	// thread on itself right after it is locked and read back, so a list
	// with as many CPUs as the layout has loops gives every loop a CPU of
	// its own (prio-thread's control loop apart from its data loop), and a
	// shorter one shares them round-robin. Empty (the default) leaves every
	// thread on the mask it inherited. Each CPU appears once, below
	// MaxCPU; New refuses one this process may not use, naming it. The
	// assignment in force is Stats.LoopThreads.
	LoopCPUs []int
	// Admission limits DATA at the data plane's entry past saturation, as
	// ParseAdmission reads it: "open" (the default) or
	// "token-bucket:RATE/BURST", per loop. Engaged after AdmissionAfter
	// saturated rounds in a row (a turn ended on a budget, data sources
	// were left queued, or the loop did not block since the round before),
	// it refuses DATA on data connections beyond the
	// bucket with REJECT, counted in the ledger as rejected; released
	// once the bucket has stayed full, with no round saturated, for a
	// second. Control connections are never limited.
	Admission string
	// AdmissionAfter is the number of saturated rounds in a row that
	// engage the admission limit (default 3; 1..1000).
	AdmissionAfter int
	// Urgent is whether data connections take urgent data (UrgentOff, the
	// default, or UrgentOOB).
	Urgent UrgentMode
	// Wait is how an idle loop waits for events.
	Wait WaitMode
	// Stats switches the latency histograms (StatsOn by default).
	Stats StatsMode
	// Ring sizes the io_uring of a completion design (Layout.Completion);
	// the readiness designs ignore it.
	Ring RingConfig
	// Faults turns the reactor into a mutant; zero value is correct.
	Faults Faults

	// beforeInbandRead, nil outside tests, is called with the fd right
	// before each in-band read of a data connection while urgent data is
	// on (set through export_linux_test.go).
	beforeInbandRead func(fd int)
}

// DefaultConfig returns the defaults documented on each field.
func DefaultConfig() Config {
	return Config{
		Listen:         "127.0.0.1:0",
		ControlListen:  "127.0.0.1:0",
		Budgets:        DefaultBudgets(),
		OutHigh:        1 << 20,
		OutLow:         256 << 10,
		OutCap:         8 << 20,
		MaxFrame:       1 << 20,
		Timer:          TimerDeadline,
		Tick:           time.Millisecond,
		Callback:       "0",
		WorkerQueue:    1024,
		IngressCap:     4096,
		Threads:        2,
		PrioDataBudget: 500 * time.Microsecond,
		MaxConns:       16384,
		MaxEvents:      128,
		StopGrace:      2 * time.Second,
		ControlSched:   string(SchedOther),
		RTHold:         2 * time.Millisecond,
		Admission:      AdmissionOpen,
		AdmissionAfter: 3,
		Urgent:         UrgentOff,
		Wait:           WaitPollFirst,
		Stats:          StatsOn,
		Ring:           DefaultRingConfig(),
	}
}

// RingConfig sizes a completion loop's io_uring. Each loop has a ring of its
// own, created on its thread.
type RingConfig struct {
	// Entries is the submission queue's size (default 256; 1..32768, the
	// kernel rounds it up to a power of two).
	Entries int
	// CQ is the completion queue's size: 0 (the default) leaves the
	// kernel's twice Entries; else Entries..65536. A burst that posts more
	// completions than it holds overflows into the kernel's list, which
	// the loop flushes and counts (Counters.CQOverflowFlushes).
	CQ int
	// Buffers is the number of provided buffers multishot receives take
	// from (default 16; a power of two, 1..32768); BufferSize their size
	// in bytes (default 4096; 512..1048576). A receive that finds none
	// free ends with ENOBUFS: the bytes wait in the socket, and the loop
	// arms the receive again once it has recycled the buffers it holds.
	// Their product bounds what one connection's receive takes from its
	// socket ahead of the loop (the kernel may fill every free buffer in
	// one enter, before a cancel lands): the default, 64 KiB, is the
	// byte budget of an epoll loop's turn.
	Buffers, BufferSize int
}

// DefaultRingConfig returns the defaults documented on each field.
func DefaultRingConfig() RingConfig {
	return RingConfig{Entries: 256, Buffers: 16, BufferSize: 4 << 10}
}

// ErrConfig marks every configuration error.
var ErrConfig = errors.New("invalid reactor configuration")

// ErrPrivilege marks, beside ErrConfig, a configuration the process may
// not grant (a real-time control-sched without CAP_SYS_NICE): not a bad
// value, a missing privilege.
var ErrPrivilege = errors.New("privilege missing")

func rangeErr(field string, v any, accepted string) error {
	return fmt.Errorf("%w: %s = %v (accepted: %s)", ErrConfig, field, v, accepted)
}

// Validate reports the first field outside its accepted range (the
// callback cost included, as cost.Parse reads it), naming it by its
// reactorlab serve flag name. It does not know the design: the design's
// Design.Check adds what depends on it (designs.ValidateFor does both).
func (c Config) Validate() error {
	for _, check := range []func() error{c.validateCounts, c.validateOutQueue, c.validateModes, c.validateDurations, c.validateAddrs} {
		if err := check(); err != nil {
			return err
		}
	}
	if c.Faults.MissedRearmEvery < 0 {
		return rangeErr("fault missed-rearm every", c.Faults.MissedRearmEvery, ">= 0")
	}
	if _, err := cost.Parse(c.Callback); err != nil {
		return fmt.Errorf("%w: callback: %w", ErrConfig, err)
	}
	return nil
}

// validateCounts checks the integer fields against their ranges.
func (c Config) validateCounts() error {
	type intField struct {
		name   string
		v      int
		lo, hi int
	}
	for _, f := range []intField{
		{"budget-ingress", c.Budgets.Ingress, 1, 1 << 20},
		{"budget-input", c.Budgets.Input, 1, 1 << 20},
		{"budget-consume", c.Budgets.Consume, 1, 1 << 20},
		{"budget-bytes", c.Budgets.Bytes, 64, 1 << 30},
		{"budget-accept", c.Budgets.Accept, 1, 1 << 20},
		{"clock-every", c.Budgets.ClockEvery, 1, 1 << 20},
		{"max-frame", c.MaxFrame, 64, 1 << 30},
		{"workers", c.Workers, 0, 1024},
		{"worker-queue", c.WorkerQueue, 1, 1 << 24},
		{"ingress-cap", c.IngressCap, 2, 1 << 24},
		{"threads", c.Threads, 1, 256},
		{"loops", c.Loops, 0, 256},
		{"max-conns", c.MaxConns, 16, 1 << 24},
		{"max-events", c.MaxEvents, 1, 1 << 16},
		{"admission-after", c.AdmissionAfter, 1, 1000},
		{"ring-entries", c.Ring.Entries, 1, 32768},
		{"ring-buffers", c.Ring.Buffers, 1, 32768},
		{"ring-buffer-size", c.Ring.BufferSize, 512, 1 << 20},
	} {
		if f.v < f.lo || f.v > f.hi {
			return rangeErr(f.name, f.v, fmt.Sprintf("%d..%d", f.lo, f.hi))
		}
	}
	if b := c.Ring.Buffers; b&(b-1) != 0 {
		return rangeErr("ring-buffers", b, "a power of two, 1..32768")
	}
	if c.Ring.CQ != 0 && (c.Ring.CQ < c.Ring.Entries || c.Ring.CQ > 65536) {
		return rangeErr("ring-cq", c.Ring.CQ, fmt.Sprintf("0 (twice ring-entries) or ring-entries (%d)..65536", c.Ring.Entries))
	}
	return nil
}

// validateOutQueue checks the watermarks against each other and the cap
// (none apply under the UnboundedOutQueue mutant).
func (c Config) validateOutQueue() error {
	if c.Faults.UnboundedOutQueue {
		return nil
	}
	if c.OutLow < 0 || c.OutLow >= c.OutHigh {
		return rangeErr("out-low", c.OutLow, fmt.Sprintf("0..out-high-1 (out-high = %d)", c.OutHigh))
	}
	if c.OutHigh > c.OutCap {
		return rangeErr("out-high", c.OutHigh, fmt.Sprintf("<= out-cap (%d)", c.OutCap))
	}
	if c.OutCap < c.MaxFrame {
		return rangeErr("out-cap", c.OutCap, fmt.Sprintf(">= max-frame (%d), or no frame could be echoed", c.MaxFrame))
	}
	return nil
}

// validateModes checks the enumerated fields.
func (c Config) validateModes() error {
	switch c.Wait {
	case WaitPollFirst, WaitBlock:
	default:
		return rangeErr("wait", c.Wait, "poll-first, block")
	}
	switch c.Stats {
	case StatsOn, StatsOff:
	default:
		return rangeErr("stats", c.Stats, "on, off")
	}
	switch c.Timer {
	case TimerPeriodic, TimerDeadline:
	default:
		return rangeErr("timer", c.Timer, "periodic, deadline")
	}
	switch c.Urgent {
	case UrgentOff, UrgentOOB:
	default:
		return rangeErr("urgent", c.Urgent, "off, oob")
	}
	if _, err := ParseAssign(c.Assign); err != nil {
		return fmt.Errorf("%w: assign = %q: %w", ErrConfig, c.Assign, err)
	}
	switch c.Exclusive {
	case "", "on", "off":
	default:
		return rangeErr("exclusive", c.Exclusive, "on, off")
	}
	if _, err := ParseAdmission(c.Admission); err != nil {
		return fmt.Errorf("%w: admission = %q: %w", ErrConfig, c.Admission, err)
	}
	if _, err := ParseSched(c.ControlSched); err != nil {
		return fmt.Errorf("%w: control-sched = %q: %w", ErrConfig, c.ControlSched, err)
	}
	if !distinctCPUs(c.LoopCPUs) {
		return rangeErr("loop-cpus", c.LoopCPUs, fmt.Sprintf("distinct CPU numbers 0..%d", MaxCPU-1))
	}
	return nil
}

// distinctCPUs reports whether cpus holds no CPU twice and none outside
// 0..MaxCPU-1.
func distinctCPUs(cpus []int) bool {
	seen := map[int]bool{}
	for _, c := range cpus {
		if c < 0 || c >= MaxCPU || seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}

// validateDurations checks the time fields against their ranges.
func (c Config) validateDurations() error {
	if c.Budgets.Time < 0 {
		return rangeErr("budget-time", c.Budgets.Time, ">= 0 (0 disables)")
	}
	if c.Tick < 10*time.Microsecond || c.Tick > time.Second {
		return rangeErr("tick", c.Tick, "10µs..1s")
	}
	if c.AppTimer < 0 || (c.AppTimer > 0 && c.AppTimer < 10*time.Microsecond) {
		return rangeErr("app-timer", c.AppTimer, "0 (off) or >= 10µs")
	}
	if c.PrioDataBudget < time.Microsecond {
		return rangeErr("prio-data-budget", c.PrioDataBudget, ">= 1µs")
	}
	if c.RTHold < 100*time.Microsecond || c.RTHold > time.Second {
		return rangeErr("rt-hold", c.RTHold, "100µs..1s")
	}
	if c.StopGrace <= 0 || c.StopGrace > time.Hour {
		return rangeErr("stop-grace", c.StopGrace, "(0, 1h]")
	}
	return nil
}

// validateAddrs checks the listen addresses as New would resolve them.
func (c Config) validateAddrs() error {
	if c.Listen == "" {
		return rangeErr("listen", `""`, "host:port")
	}
	for _, a := range []struct{ name, addr string }{{"listen", c.Listen}, {"control-listen", c.ControlListen}} {
		if a.addr == "" {
			continue // control-listen: none (Listen's is refused above)
		}
		if err := checkListenAddr(a.addr); err != nil {
			return fmt.Errorf("%w: %s = %q: %s (accepted: IP:port or localhost:port, port 0 picks one)", ErrConfig, a.name, a.addr, err)
		}
	}
	return nil
}

// checkListenAddr refuses what New would when it resolves addr to listen
// on: not host:port, a host that is neither an IP address nor localhost
// (or empty), or a port that is no port number (or service name). It
// resolves nothing but the port: the host must be a literal.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return errors.New(ae.Err)
		}
		return err
	}
	if host != "" && host != "localhost" {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("host %q is not an IP address", host)
		}
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is not a port number", port)
	}
	return nil
}
