package reactors

import (
	"github.com/reactorlab/reactorlab/wire"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Ledger accounts for every DATA frame a reactor took in: the wire ledger
// (Accepted counts every DATA frame read; each ends Completed, echoed, or
// Rejected, answered with REJECT or dropped because its connection vanished)
// plus Abandoned, the part of Rejected whose connection closed before the
// answer could be delivered. At STOP_ACK Accepted == Completed + Rejected.
type Ledger struct {
	wire.Ledger
	Abandoned uint64 `json:"abandoned"`
}

func (l *Ledger) add(o Ledger) {
	l.Accepted += o.Accepted
	l.Completed += o.Completed
	l.Rejected += o.Rejected
	l.Abandoned += o.Abandoned
}

// Counters are a loop's monotonic event counts. A loop updates its own copy
// without synchronisation and publishes it at most once per millisecond
// (and before it blocks), so readers see a consistent, slightly old copy.
type Counters struct {
	Rounds           uint64 `json:"rounds"`
	EpollWaits       uint64 `json:"epoll_waits"`
	ZeroTimeoutWaits uint64 `json:"zero_timeout_waits"`
	BlockingWaits    uint64 `json:"blocking_waits"`
	IdleWakeups      uint64 `json:"idle_wakeups"`
	Events           uint64 `json:"events"`
	EventsIn         uint64 `json:"events_in"`
	EventsOut        uint64 `json:"events_out"`
	EventsErr        uint64 `json:"events_err_hup"`
	EpolloutEmpty    uint64 `json:"epollout_empty_queue"`
	StaleEvents      uint64 `json:"stale_events"`
	StaleResults     uint64 `json:"stale_results"`
	ConnsAccepted    uint64 `json:"conns_accepted"`
	ConnsRefused     uint64 `json:"conns_refused"`
	ConnsClosed      uint64 `json:"conns_closed"`
	AcceptEMFILE     uint64 `json:"accept_emfile"`
	AcceptPauses     uint64 `json:"accept_pauses"`
	AcceptErrors     uint64 `json:"accept_errors"`
	QuiesceTimeouts  uint64 `json:"quiesce_timeouts"`
	FramesIn         uint64 `json:"frames_in"`
	FramesEchoed     uint64 `json:"frames_echoed"`
	PingsEchoed      uint64 `json:"pings_echoed"`
	BytesIn          uint64 `json:"bytes_in"`
	BytesOut         uint64 `json:"bytes_out"`
	RejectsSent      uint64 `json:"rejects_sent"`
	OverSizeClosed   uint64 `json:"oversize_closed"`
	MalformedClosed  uint64 `json:"malformed_closed"`
	HardCapClosed    uint64 `json:"hardcap_closed"`
	BackpressureOn   uint64 `json:"backpressure_pauses"`
	InputBudgetHits  uint64 `json:"input_budget_hits"`
	ByteBudgetHits   uint64 `json:"byte_budget_hits"`
	TimeBudgetHits   uint64 `json:"time_budget_hits"`
	Requeues         uint64 `json:"requeues"`
	IngressItems     uint64 `json:"ingress_items"`
	IngressMaxDepth  uint64 `json:"ingress_max_depth"`
	ReadyQueueMax    uint64 `json:"ready_queue_max"`
	TimersFired      uint64 `json:"timers_fired"`
	TasksOffloaded   uint64 `json:"tasks_offloaded"`
	PoolFullPauses   uint64 `json:"pool_full_pauses"`
	Rearms           uint64 `json:"rearms"`
	MissedRearms     uint64 `json:"missed_rearms"`
	// RTRests counts the real-time hold's rests (restIfHeld): rounds after
	// which a real-time control loop, busy for RTHold, slept for RTHold.
	RTRests uint64 `json:"rt_rests"`
	// RTLongestHoldNs is the longest a real-time control loop ran without
	// blocking or resting, from waking or its last rest to the next rest
	// or blocking wait (ns, wall clock: an upper bound on the CPU it held
	// in one stretch).
	RTLongestHoldNs uint64 `json:"rt_longest_hold_ns"`
	// AdmissionEngaged counts the times a loop's admission limit engaged
	// (Config.AdmissionAfter saturated rounds in a row); AdmissionRejects
	// the DATA frames it refused with REJECT (also in the ledger's
	// Rejected).
	AdmissionEngaged uint64 `json:"admission_engaged"`
	AdmissionRejects uint64 `json:"admission_rejects"`
	// UrgentIn counts the urgent bytes read (recv MSG_OOB), UrgentOut the
	// urgent answers sent (send MSG_OOB).
	UrgentIn  uint64 `json:"urgent_in"`
	UrgentOut uint64 `json:"urgent_out"`

	// BusyNs is the time the loop spent outside blocking epoll_waits since
	// it started (a zero-timeout poll is busy; so is time runnable but not
	// on a CPU).
	BusyNs uint64 `json:"busy_ns"`
	// AcceptWakeups counts accept turns (listener events served);
	// Accepts the connections they accepted; UselessAcceptWakeups the turns
	// whose first accept found the backlog empty (EAGAIN): another loop
	// took the connection this wakeup was for, or none was there.
	AcceptWakeups        uint64 `json:"accept_wakeups"`
	Accepts              uint64 `json:"accepts"`
	UselessAcceptWakeups uint64 `json:"useless_accept_wakeups"`
	// Handoffs counts the connections an acceptor handed to a sub-loop,
	// HandoffsIn those a sub-loop registered from its ingress; HandoffFull
	// the pushes that found the chosen sub-loop's ingress full (the
	// acceptor then tries the others or keeps the connection), and
	// HandoffBacklogMax the most connections the acceptor held at once
	// because every sub-loop's ingress was full.
	Handoffs          uint64 `json:"handoffs"`
	HandoffsIn        uint64 `json:"handoffs_in"`
	HandoffFull       uint64 `json:"handoff_full"`
	HandoffBacklogMax uint64 `json:"handoff_backlog_max"`
	// StaleResultsFdElsewhere counts the stale results (StaleResults)
	// whose connection's fd number had by then been registered by another
	// loop: results that a reactor routing by fd number would have
	// delivered to a stranger there.
	StaleResultsFdElsewhere uint64 `json:"stale_results_fd_elsewhere"`
	// The completion path (Layout.Completion), 0 on the readiness designs.
	// RingEnters counts io_uring_enter calls (each submits what is queued
	// and, blocking or not, collects completions); Completions the
	// completions handled; RecvEnobufs the receives that ended with
	// ENOBUFS (the buffer ring was empty), counted before anything is
	// done about them; EnobufsRearms the multishot receives armed again
	// after ending so (backpressure, never end of stream), at most
	// max(1, the buffers given back) a round; RingBuffersReturned the provided buffers given back to the
	// ring, one a receive completion that carried one; CQOverflowFlushes the times completions had
	// overflowed the completion queue into the kernel's list and were
	// flushed back; CompletionsLost the completions the
	// uring-overflow-ignored mutant never handled (0 on a correct loop).
	RingEnters          uint64 `json:"ring_enters"`
	Completions         uint64 `json:"completions"`
	RecvEnobufs         uint64 `json:"recv_enobufs"`
	EnobufsRearms       uint64 `json:"enobufs_rearms"`
	RingBuffersReturned uint64 `json:"ring_buffers_returned"`
	CQOverflowFlushes   uint64 `json:"cq_overflow_flushes"`
	CompletionsLost     uint64 `json:"completions_lost"`
}

func (c *Counters) add(o *Counters) {
	c.Rounds += o.Rounds
	c.EpollWaits += o.EpollWaits
	c.ZeroTimeoutWaits += o.ZeroTimeoutWaits
	c.BlockingWaits += o.BlockingWaits
	c.IdleWakeups += o.IdleWakeups
	c.Events += o.Events
	c.EventsIn += o.EventsIn
	c.EventsOut += o.EventsOut
	c.EventsErr += o.EventsErr
	c.EpolloutEmpty += o.EpolloutEmpty
	c.StaleEvents += o.StaleEvents
	c.StaleResults += o.StaleResults
	c.ConnsAccepted += o.ConnsAccepted
	c.ConnsRefused += o.ConnsRefused
	c.ConnsClosed += o.ConnsClosed
	c.AcceptEMFILE += o.AcceptEMFILE
	c.AcceptPauses += o.AcceptPauses
	c.AcceptErrors += o.AcceptErrors
	c.QuiesceTimeouts += o.QuiesceTimeouts
	c.FramesIn += o.FramesIn
	c.FramesEchoed += o.FramesEchoed
	c.PingsEchoed += o.PingsEchoed
	c.BytesIn += o.BytesIn
	c.BytesOut += o.BytesOut
	c.RejectsSent += o.RejectsSent
	c.OverSizeClosed += o.OverSizeClosed
	c.MalformedClosed += o.MalformedClosed
	c.HardCapClosed += o.HardCapClosed
	c.BackpressureOn += o.BackpressureOn
	c.InputBudgetHits += o.InputBudgetHits
	c.ByteBudgetHits += o.ByteBudgetHits
	c.TimeBudgetHits += o.TimeBudgetHits
	c.Requeues += o.Requeues
	c.IngressItems += o.IngressItems
	c.IngressMaxDepth = max(c.IngressMaxDepth, o.IngressMaxDepth)
	c.ReadyQueueMax = max(c.ReadyQueueMax, o.ReadyQueueMax)
	c.TimersFired += o.TimersFired
	c.TasksOffloaded += o.TasksOffloaded
	c.PoolFullPauses += o.PoolFullPauses
	c.Rearms += o.Rearms
	c.MissedRearms += o.MissedRearms
	c.RTRests += o.RTRests
	c.RTLongestHoldNs = max(c.RTLongestHoldNs, o.RTLongestHoldNs)
	c.AdmissionEngaged += o.AdmissionEngaged
	c.AdmissionRejects += o.AdmissionRejects
	c.UrgentIn += o.UrgentIn
	c.UrgentOut += o.UrgentOut
	c.BusyNs += o.BusyNs
	c.AcceptWakeups += o.AcceptWakeups
	c.Accepts += o.Accepts
	c.UselessAcceptWakeups += o.UselessAcceptWakeups
	c.Handoffs += o.Handoffs
	c.HandoffsIn += o.HandoffsIn
	c.HandoffFull += o.HandoffFull
	c.HandoffBacklogMax = max(c.HandoffBacklogMax, o.HandoffBacklogMax)
	c.StaleResultsFdElsewhere += o.StaleResultsFdElsewhere
	c.RingEnters += o.RingEnters
	c.Completions += o.Completions
	c.RecvEnobufs += o.RecvEnobufs
	c.EnobufsRearms += o.EnobufsRearms
	c.RingBuffersReturned += o.RingBuffersReturned
	c.CQOverflowFlushes += o.CQOverflowFlushes
	c.CompletionsLost += o.CompletionsLost
}

// Histogram names, the keys of Stats.Histograms.
const (
	HistRound       = "round_ns"
	HistReadyQueue  = "ready_queue_len"
	HistRotation    = "rotation_interval_ns"
	HistTimerLate   = "timer_deviation_ns"
	HistStopObserve = "stop_observation_ns"
	// HistHandoff is mainsub's handoff latency: from the acceptor's
	// accept to the connection's registration on its sub-loop;
	// HistHandoffFirstRead from the accept to the sub-loop's first read of
	// it that brought bytes (the handoff plus the wait for the client's
	// first bytes and for the sub-loop to serve them).
	HistHandoff          = "handoff_ns"
	HistHandoffFirstRead = "handoff_first_read_ns"
)

// histograms is a loop's set of HDR histograms, recorded only by that loop.
type histograms struct {
	round, readyLen, rotation, timerLate, stopObserve, handoff, firstRead *hdrhistogram.Histogram
	// off: nothing is recorded (Config.Stats == StatsOff).
	off bool
	// dropped counts values outside a histogram's range (never swallowed).
	dropped uint64
}

// histDigits is the precision of the loop's histograms: 2 significant
// digits, so a value is recorded within 1% of itself. With 3 digits each
// histogram up to a minute took 216 KiB; with 2, 30 KiB, and the five a
// loop records into fit in a core's L2 cache beside the loop's own data
// (the two handoff histograms are touched only on mainsub's sub-loops,
// and only once per connection). Recording into
// the larger ones cost et and oneshot about 3.5% of their capacity at half
// a CPU (see docs/PERFORMANCE.md).
const histDigits = 2

func newHistograms(off bool) *histograms {
	const maxNs = int64(60e9) // one minute: longer is a hang, not a latency
	return &histograms{
		round:       hdrhistogram.New(1, maxNs, histDigits),
		readyLen:    hdrhistogram.New(1, 1<<24, histDigits),
		rotation:    hdrhistogram.New(1, maxNs, histDigits),
		timerLate:   hdrhistogram.New(1, maxNs, histDigits),
		stopObserve: hdrhistogram.New(1, maxNs, histDigits),
		handoff:     hdrhistogram.New(1, maxNs, histDigits),
		firstRead:   hdrhistogram.New(1, maxNs, histDigits),
		off:         off,
	}
}

func (h *histograms) record(to *hdrhistogram.Histogram, v int64) {
	if h.off {
		return
	}
	if v < 1 {
		v = 1
	}
	if to.RecordValue(v) != nil {
		h.dropped++
	}
}

func (h *histograms) byName() map[string]*hdrhistogram.Histogram {
	return map[string]*hdrhistogram.Histogram{
		HistRound: h.round, HistReadyQueue: h.readyLen, HistRotation: h.rotation,
		HistTimerLate: h.timerLate, HistStopObserve: h.stopObserve, HistHandoff: h.handoff,
		HistHandoffFirstRead: h.firstRead,
	}
}

// HistSummary is a histogram reduced to what a person reads; Snapshot keeps
// the lossless form for merging.
type HistSummary struct {
	Count uint64  `json:"count"`
	Min   int64   `json:"min"`
	P50   int64   `json:"p50"`
	P90   int64   `json:"p90"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p999"`
	Max   int64   `json:"max"`
	Mean  float64 `json:"mean"`
}

// Summarize reduces h to its percentiles.
func Summarize(h *hdrhistogram.Histogram) HistSummary {
	if h.TotalCount() == 0 {
		return HistSummary{}
	}
	return HistSummary{
		Count: uint64(h.TotalCount()), Min: h.Min(), Max: h.Max(), Mean: h.Mean(),
		P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9),
	}
}

// Stats is a reactor's statistics: counters summed over its loops, the
// ledger, and (once the reactor has stopped, or when requested with
// histograms) the merged HDR histograms.
type Stats struct {
	Design     DesignName             `json:"reactor"`
	Loops      int                    `json:"loops"`
	Counters   Counters               `json:"counters"`
	Ledger     Ledger                 `json:"ledger"`
	Histograms map[string]HistSummary `json:"histograms,omitempty"`
	HistDrops  uint64                 `json:"histogram_values_dropped"`
	LoopCPUNs  uint64                 `json:"loop_cpu_ns"` // CPU time of the loop threads (offload workers not included)
	// LoopSched is each loop thread's scheduling class as the kernel
	// reported it once the loop ran (ParseSched's form; see
	// Config.ControlSched), in loop order.
	LoopSched []string `json:"loop_sched,omitempty"`
	// LoopThreads is each loop's OS thread and the CPU Config.LoopCPUs
	// pinned it to (-1: not pinned), in loop order, as read back once the
	// loop ran: what a harness checks every thread's mask against.
	LoopThreads []LoopThread `json:"loop_threads,omitempty"`
	// PerLoop is each loop's own figures, in loop order (see LoopStats);
	// Imbalance compares its data loops. Both are live in Reactor.Stats.
	PerLoop   []LoopStats                       `json:"per_loop,omitempty"`
	Imbalance *Imbalance                        `json:"imbalance,omitempty"`
	Raw       map[string]*hdrhistogram.Snapshot `json:"-"`
}
