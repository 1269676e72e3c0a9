package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/wire"
)

// The latency classes of a run's Recorder (values in nanoseconds).
const (
	// ClassData is DATA round-trip time. Steady sources measure it from
	// each frame's intended send time (corrected for coordinated omission);
	// hot sources, having no schedule, from the actual write.
	ClassData = "data"
	// ClassDataUncorrected is DATA round-trip time from the actual write:
	// the same frames as ClassData, without the time a frame waited to be
	// written (window full, socket full, a fault's pause).
	ClassDataUncorrected = "data-uncorrected"
	// ClassSteady is the steady sources' frames alone, measured as in
	// ClassData (from each frame's intended send time): the light
	// connections' latency when hot ones share the target. Recorded only
	// when a run has both hot and steady sources (otherwise it would be
	// ClassData again).
	ClassSteady = "steady"
	// ClassControl is PING round-trip time from each PING's intended time.
	ClassControl = "control"
	// ClassStop is the time from writing STOP to reading STOP_ACK.
	ClassStop = "stop"
	// ClassSendLag is, per steady frame, how late the generator built it:
	// from the later of its intended time and the moment the connection
	// could take it (window open, socket writable, no fault pause) to the
	// moment it was built. It is the generator's own scheduling delay.
	ClassSendLag = "send-lag"
	// ClassUrgent is, per urgent byte (Config.UrgentEvery), the time from
	// its tick's intended time to the target's urgent answer (corrected
	// for coordinated omission; see UrgentOutcome). Only with urgent bytes.
	ClassUrgent = "urgent"
	// ClassServicePrefix + connection name ("service/hot-0") is the time
	// between consecutive reads that brought answers on that connection,
	// counted only while it had frames outstanding.
	ClassServicePrefix = "service/"
)

// The values of SelfCheck.Limit.
const (
	LimitNone    = "none"
	LimitLoadgen = "loadgen"
	LimitTarget  = "target"
)

// Accounting counts frames. For the frames a connection sent, every one ends
// in exactly one of Echoed, Rejected, Lost, Abandoned, Unanswered or
// CorruptedAnswers (when the answer that settled it failed a check):
//
//	Sent = Echoed + Rejected + Lost + Abandoned + Unanswered + CorruptedAnswers
//
// (Balanced checks it). Duplicated, WrongConn and Unexpected count
// receptions beyond that balance: frames that settle nothing of ours.
type Accounting struct {
	// Sent counts frames written in full.
	Sent uint64 `json:"sent"`
	// Echoed counts frames answered intact: same header, payload matching
	// wire.FillPattern(token, seq).
	Echoed uint64 `json:"echoed"`
	// Rejected counts frames answered by a REJECT with their token and seq.
	Rejected uint64 `json:"rejected"`
	// Lost counts frames still unanswered when the run ended normally
	// (after Drain), or when the target closed the connection.
	Lost uint64 `json:"lost"`
	// Duplicated counts answers to frames already answered.
	Duplicated uint64 `json:"duplicated"`
	// CorruptedAnswers counts answers to a frame of ours, sent and not yet
	// settled, that failed a check (payload not the pattern, length, flags
	// or send time changed): each settles its frame.
	CorruptedAnswers uint64 `json:"corrupted_answers"`
	// Unexpected counts received frames that answer nothing of ours: a seq
	// never sent (or not yet written in full), a token not ours, a kind not
	// expected on the connection, or a stream broken beyond decoding.
	Unexpected uint64 `json:"unexpected"`
	// WrongConn counts frames received on one of our connections carrying
	// the token of another one.
	WrongConn uint64 `json:"wrong_connection"`
	// Abandoned counts frames outstanding on a connection that a wire fault
	// itself closed, reset or reconnected (or that carried an over-size
	// header): expected, not loss.
	Abandoned uint64 `json:"abandoned_by_fault"`
	// Unanswered counts frames outstanding when the run ended for a reason
	// that excuses the target: Run's context was cancelled, or the target
	// stopped after our STOP (frames it never read, after it closed
	// admission).
	Unanswered uint64 `json:"unanswered"`
}

func (a *Accounting) add(b Accounting) {
	a.Sent += b.Sent
	a.Echoed += b.Echoed
	a.Rejected += b.Rejected
	a.Lost += b.Lost
	a.Duplicated += b.Duplicated
	a.CorruptedAnswers += b.CorruptedAnswers
	a.Unexpected += b.Unexpected
	a.WrongConn += b.WrongConn
	a.Abandoned += b.Abandoned
	a.Unanswered += b.Unanswered
}

// bad reports whether a shows any loss, duplicate, corrupted answer,
// unexpected frame or wrong-connection delivery.
func (a Accounting) bad() bool {
	return a.Lost > 0 || a.Duplicated > 0 || a.CorruptedAnswers > 0 || a.Unexpected > 0 || a.WrongConn > 0
}

// Balanced reports whether every frame sent was settled exactly once:
// Sent = Echoed + Rejected + Lost + Abandoned + Unanswered + CorruptedAnswers.
// It holds for every connection's and every total's accounting of a
// finished run.
func (a Accounting) Balanced() bool {
	return a.Sent == a.Echoed+a.Rejected+a.Lost+a.Abandoned+a.Unanswered+a.CorruptedAnswers
}

// ConnResult is one source's connection: its accounting over every physical
// connection it used (a wire fault may reconnect it, with a new token each
// time).
type ConnResult struct {
	// Name is "hot-<i>", "steady-<i>" or "control-<i>".
	Name string `json:"name"`
	// Kind is "hot", "steady" or "control".
	Kind string `json:"kind"`
	// Token is the token of its first connection; each reconnection has a
	// new one.
	Token       uint64 `json:"token"`
	Connections int    `json:"connections"`
	Accounting
	// MaxInFlight is the most frames it ever had outstanding.
	MaxInFlight int `json:"max_in_flight"`
	// OverSizeRejected counts REJECTs of the over-size fault's header.
	OverSizeRejected uint64 `json:"over_size_rejected,omitempty"`
	// ConnectErrors counts failed reconnections.
	ConnectErrors uint64 `json:"connect_errors,omitempty"`
	// BlockedS is, for steady and control sources, how long due frames
	// waited, by cause: "window" (outstanding frames at the window), "socket"
	// (the kernel's send buffer full), "fault" (a wire fault's pause or
	// reconnection).
	BlockedS map[string]float64 `json:"blocked_s,omitempty"`
	// Evidence holds the first few anomalies, with the frames concerned.
	Evidence []string `json:"evidence,omitempty"`
	// Ended says why the connection stopped before the end of the run, if
	// it did.
	Ended string `json:"ended,omitempty"`
	// HealthCheck is a control connection's false timeouts and removals
	// (nil for a data connection, and without control probes).
	HealthCheck *HealthCheck `json:"health_check,omitempty"`
	// Urgent is a data connection's urgent bytes (nil for a control
	// connection, and without Config.UrgentEvery).
	Urgent *UrgentOutcome `json:"urgent,omitempty"`
}

// SelfCheck says whether the generator itself kept up, and which side
// limited the run.
type SelfCheck struct {
	// Limit is LimitNone, LimitLoadgen (its own scheduling lag or CPU) or
	// LimitTarget (window full, backpressure, or hot sources, which by
	// design send as fast as the target answers).
	Limit string `json:"limit"`
	// Reasons explains Limit with figures.
	Reasons []string `json:"reasons,omitempty"`
	// Engine is the engine the loops did their I/O with (Config.Engine:
	// EngineEpoll or EngineUring).
	Engine string `json:"engine"`
	// Uring sums the loops' rings' counters (nil on the epoll engine).
	Uring *UringCounts `json:"uring,omitempty"`
	// TargetRate and AchievedRate are frames/s across the steady sources
	// over the measured time; RateRatio = achieved / target (1 is exact;
	// the check wants it within 1%).
	TargetRate   float64 `json:"target_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	RateRatio    float64 `json:"rate_ratio"`
	// SendLagP99Us and SendLagMaxUs summarise ClassSendLag over the
	// measured time; the check wants p99 < 1 ms.
	SendLagP99Us float64 `json:"send_lag_p99_us"`
	SendLagMaxUs float64 `json:"send_lag_max_us"`
	// BlockedS sums the steady sources' BlockedS by cause.
	BlockedS map[string]float64 `json:"blocked_s,omitempty"`
	// HotEchoRate is frames/s answered to hot sources over the measured time.
	HotEchoRate float64 `json:"hot_echo_rate"`
	// LoopBusy is the fraction of the run the generator's loop thread was
	// on a CPU (with several loops, the busiest loop's); near 1 the
	// generator is saturated.
	LoopBusy float64 `json:"loop_busy"`
	// CPUUserS and CPUSysS are this process's CPU time during the run,
	// over RunS: (CPUUserS + CPUSysS) / RunS is the generator's CPU share
	// (in CPUs).
	CPUUserS float64 `json:"cpu_user_s"`
	CPUSysS  float64 `json:"cpu_sys_s"`
	// RunS is the wall time over which LoopBusy, CPUUserS and CPUSysS were
	// measured: from the start of sending to the end of the drain.
	RunS float64 `json:"run_s"`
	// ChurnLagP99Us and ChurnLagMaxUs summarise ClassChurnLag (how late
	// churn connections were opened behind their instants) over the
	// measured time, with churn; the check wants p99 < 1 ms.
	ChurnLagP99Us float64 `json:"churn_lag_p99_us,omitempty"`
	ChurnLagMaxUs float64 `json:"churn_lag_max_us,omitempty"`
	// Gates are the statistical checks of the whole run's figures (the
	// run's self-check only; a loop's has none): the achieved rate, the
	// arrival process, the independence and stationarity of each open
	// loop's latencies, and the samples behind the headline percentile. A
	// failed gate flags the run (FailedGates); it does not make it
	// invalid, since its figures were honestly measured — they mean less.
	Gates []Gate `json:"gates,omitempty"`

	loadgenReasons []string // the generator's part of Reasons
}

// UringCounts are the uring engine's rings' counters over a run, summed
// over the loops: what the engine cost in system calls and how often the
// kernel ran short. Every count only grows during a run.
type UringCounts struct {
	// Enters is io_uring_enter calls: each submits the round's sends and
	// recv re-arms and, unless the loop only polls, waits.
	Enters uint64 `json:"enters"`
	// Submitted is the SQEs the kernel consumed; Reaped the completions read.
	Submitted uint64 `json:"submitted"`
	Reaped    uint64 `json:"reaped"`
	// OverflowFlushes counts completion-queue overflows flushed (none lost).
	OverflowFlushes uint64 `json:"overflow_flushes"`
	// NoBuffers counts recvs that found the buffer ring empty and were
	// re-armed (backpressure, not end of stream).
	NoBuffers uint64 `json:"no_buffers"`
}

// FailedGates returns the gates that failed, in Gates' order.
func (sc SelfCheck) FailedGates() []Gate {
	var out []Gate
	for _, g := range sc.Gates {
		if g.Verdict == GateFail {
			out = append(out, g)
		}
	}
	return out
}

// The names of Gate.Name.
const (
	// GateRate: the steady sources' achieved rate within 1% of the target.
	GateRate = "rate"
	// GateArrivals: the steady sources' sent times follow the intended
	// arrival process (Poisson: exponential gaps and counts as dispersed
	// as a Poisson process's; fixed: each source keeps its period).
	GateArrivals = "arrivals"
	// GateIndependence: consecutive latency samples of an open loop are
	// not correlated beyond 1/3 (a class that fails has its intervals
	// count one sample in Gate.CountsOneIn).
	GateIndependence = "independence"
	// GateStationarity: a class's median and p90 do not trend through the
	// run.
	GateStationarity = "stationarity"
	// GateSamples: a class holds enough samples for an interval of its
	// headline percentile (HeadlinePercentile).
	GateSamples = "samples"
	// GatePrecision: with Config.Precision, the headline interval was as
	// narrow as asked within the time allowed.
	GatePrecision = "precision"
)

// HeadlinePercentile is the percentile the samples gate asks an interval
// of, in every latency class, and Config.Precision narrows: a run with too
// few samples for it has no headline to compare.
const HeadlinePercentile = 99

// The values of Gate.Verdict.
const (
	GatePass      = "pass"
	GateFail      = "fail"
	GateNotJudged = "not judged"
)

// Gate is one statistical check of a run: its verdict and the figures it
// rests on. A gate not judged says why in Figure; it neither passes nor
// fails the run.
type Gate struct {
	Name string `json:"name"`
	// Class is the latency class a per-class gate judged ("steady", "hot",
	// "control": the sources' kind); empty for the rate and the arrivals.
	Class   string `json:"class,omitempty"`
	Verdict string `json:"verdict"`
	Figure  string `json:"figure"`
	// Thinning, for a failed independence gate, is the smallest k at which
	// samples k apart are no longer correlated beyond the gate's bound
	// (stats.ThinningFor; 0: none up to stats.MaxThinning).
	Thinning int `json:"thinning,omitempty"`
	// CountsOneIn, for a failed independence gate, is how many samples
	// its Histogram's intervals count as one (stats.IntervalThinning;
	// stats.ThinningUnknown: they have no interval).
	CountsOneIn int `json:"counts_one_in,omitempty"`
	// Histogram, for an independence gate, is the recorder's class that
	// holds the judged samples alone ("": none does, as hot sources beside
	// steady ones share ClassData).
	Histogram string `json:"histogram,omitempty"`
}

// IntervalThinning is the thinning the intervals of g's Histogram take
// (stats.Interval's Thinning): CountsOneIn for a failed independence
// gate with a histogram, 0 (independent) for any other gate.
func (g Gate) IntervalThinning() int {
	if g.Name != GateIndependence || g.Verdict != GateFail || g.Histogram == "" {
		return 0
	}
	return g.CountsOneIn
}

// String is the gate as a line: "independence (control): fail: lag-1 …".
func (g Gate) String() string { return g.Key() + ": " + g.Verdict + ": " + g.Figure }

// Key names the gate and, for a per-class gate, its class:
// "independence (control)", "rate".
func (g Gate) Key() string {
	if g.Class == "" {
		return g.Name
	}
	return g.Name + " (" + g.Class + ")"
}

// PrecisionOutcome is what became of Config.Precision: the headline
// interval's width when the run stopped sending, and whether it was as
// narrow as asked.
type PrecisionOutcome struct {
	// Target is Config.Precision; Class and Percentile what was judged
	// (ClassData, or ClassControl without data sources; HeadlinePercentile).
	Target     float64 `json:"target"`
	Class      string  `json:"class"`
	Percentile float64 `json:"percentile"`
	// Width is the interval's width over the percentile at the last look
	// (0 with TooFew: the samples had no interval yet).
	Width  float64 `json:"width"`
	TooFew bool    `json:"too_few,omitempty"`
	// Judged: the width was looked at when sending reached its end (not
	// when the run was interrupted, or every source ended first).
	// Met: Width <= Target. MeasuredS is the measured time it took (or
	// PrecisionWithin's, not met), ExtendedS how much of it was beyond
	// Duration.
	Judged    bool    `json:"judged"`
	Met       bool    `json:"met"`
	MeasuredS float64 `json:"measured_s"`
	ExtendedS float64 `json:"extended_s"`
}

// StopOutcome is what became of the STOP probe.
type StopOutcome struct {
	// Status is "acknowledged", "not acknowledged: echoed" (a byte-echo
	// target sent the STOP frame back), "not acknowledged: no answer", or
	// "not sent: <why>".
	Status string `json:"status"`
	// Connection is the control connection that carried it.
	Connection string `json:"connection,omitempty"`
	// SentAtS is when it was written, in seconds since the run started.
	SentAtS float64 `json:"sent_at_s,omitempty"`
	// LatencyUs is the time to STOP_ACK (also in ClassStop).
	LatencyUs float64 `json:"latency_us,omitempty"`
	// Ledger is the STOP_ACK's ledger, decoded by wire.DecodeLedger.
	Ledger   *wire.Ledger `json:"ledger,omitempty"`
	Balanced bool         `json:"balanced,omitempty"`
	// LedgerError is why the STOP_ACK payload could not be decoded.
	LedgerError string `json:"ledger_error,omitempty"`
	// DataAnswered is the DATA frames we saw echoed or rejected; with no
	// other client and no connection fault it equals Ledger.Accepted.
	DataAnswered uint64 `json:"data_answered,omitempty"`
}

// Progress is a report during a run. Its frame counts are the data
// connections' (hot and steady sources), as the run's Totals are; the
// control connections' (PINGs, STOP), which carry no data, are counted
// apart, as ControlTotals are. Durations are nanoseconds in its JSON form.
type Progress struct {
	Elapsed   time.Duration `json:"elapsed_ns"` // since the run started (warm-up included)
	Measuring bool          `json:"measuring"`  // the warm-up is over
	Sent      uint64        `json:"sent"`       // DATA frames written in full
	Echoed    uint64        `json:"echoed"`     // DATA frames answered intact
	// Rate is DATA frames answered intact per second over the last
	// interval.
	Rate float64 `json:"rate"`
	// ControlSent and ControlEchoed count the control connections' frames.
	ControlSent   uint64 `json:"control_sent"`
	ControlEchoed uint64 `json:"control_echoed"`
	// DataP99 and ControlP99 are the 99th percentiles of the last closed
	// interval (0 when it had no values).
	DataP99    time.Duration `json:"data_p99_ns"`
	ControlP99 time.Duration `json:"control_p99_ns"`
}

// newProgress is the report at elapsed of a run whose data connections'
// accounts sum to data and whose control connections' sum to control;
// lastEchoed is data's Echoed at the previous report, interval the time
// since it (the rate is over it; 0 leaves the rate 0).
func newProgress(elapsed time.Duration, measuring bool, data, control Accounting, lastEchoed uint64, interval time.Duration) Progress {
	p := Progress{Elapsed: elapsed, Measuring: measuring, Sent: data.Sent, Echoed: data.Echoed,
		ControlSent: control.Sent, ControlEchoed: control.Echoed}
	if interval > 0 && data.Echoed >= lastEchoed {
		p.Rate = float64(data.Echoed-lastEchoed) / interval.Seconds()
	}
	return p
}

// Result is the outcome of Run.
type Result struct {
	// Config is the configuration run, defaults applied.
	Config Config
	// Recorder holds the latency classes (Class* constants), closed.
	Recorder *record.Recorder
	// Start is when sending started; Measured is the measured part of the
	// sending phase (Duration, or less if the run was cut short).
	Start    time.Time
	Measured time.Duration
	// Interrupted is true when Run's context ended the run early.
	Interrupted bool
	// Valid is false when any frame was lost, duplicated, corrupted or
	// delivered to the wrong connection, or the STOP ledger was not
	// balanced; Invalid says why, naming connections and counts.
	Valid   bool
	Invalid []string
	// Totals sums the data (hot and steady) connections; ControlTotals the
	// control connections (PINGs).
	Totals        Accounting
	ControlTotals Accounting
	// Conns has one entry per source, hot, steady and control, in that
	// order.
	Conns []ConnResult
	// SelfCheck says whether the generator kept up and which side limited
	// the run.
	SelfCheck SelfCheck
	// Stop is the STOP probe's outcome (nil without one).
	Stop *StopOutcome
	// Precision is what became of Config.Precision (nil without one).
	Precision *PrecisionOutcome
	// HealthCheck sums the control connections' false timeouts and
	// removals (nil without control probes).
	HealthCheck *HealthCheck
	// Urgent sums the data connections' urgent bytes (nil without
	// Config.UrgentEvery).
	Urgent *UrgentOutcome
	// Churn sums the loops' churn connections (nil without
	// Config.ChurnRate).
	Churn *ChurnOutcome
	// Loops has one entry per event loop (Config.Loops), in order: each
	// loop's thread, CPU, connections, totals and self-check. The loops'
	// Totals add up to Totals, their ControlTotals to ControlTotals, and
	// Recorder is the lossless merge of their recorders.
	Loops []LoopReport
}

// LoopReport is one event loop of a run.
type LoopReport struct {
	// Index is the loop's number, 0..Config.Loops-1.
	Index int `json:"index"`
	// Tid is the loop's OS thread (its /proc/PID/task entry).
	Tid int `json:"tid"`
	// CPU is the CPU the thread was pinned to (Config.LoopCPUs), -1 when
	// it was left on the mask it inherited.
	CPU int `json:"cpu"`
	// Connections names the sources the loop served, in order.
	Connections []string `json:"connections"`
	// Totals and ControlTotals sum the loop's data and control
	// connections.
	Totals        Accounting `json:"totals"`
	ControlTotals Accounting `json:"control_totals"`
	// SelfCheck is the loop's own: its steady sources against their share
	// of the rate, its send lag, its thread's busy fraction (LoopBusy).
	// CPUUserS and CPUSysS are the loop thread's alone.
	SelfCheck SelfCheck `json:"self_check"`
	// Churn is the loop's churn connections (nil without
	// Config.ChurnRate); the loops' add up to Result.Churn.
	Churn *ChurnOutcome `json:"churn,omitempty"`
	// Recorder is the loop's own recorder, closed: Result.Recorder is the
	// merge of every loop's. Not part of the JSON form.
	Recorder *record.Recorder `json:"-"`
}

// addHealth adds one control connection's health check counts to r's.
func (r *Result) addHealth(h HealthCheck) {
	if r.HealthCheck == nil {
		r.HealthCheck = &HealthCheck{}
	}
	r.HealthCheck.add(h)
}

// addUrgent adds one data connection's urgent counts to r's.
func (r *Result) addUrgent(u UrgentOutcome) {
	if r.Urgent == nil {
		r.Urgent = &UrgentOutcome{}
	}
	r.Urgent.add(u)
}

// Summary is the JSON form of a Result: the same fields (Measured in
// seconds, the Recorder as per-class latency summaries in microseconds),
// plus EchoRate. Field names are stable; it round-trips through
// encoding/json.
type Summary struct {
	Valid         bool              `json:"valid"`
	Invalid       []string          `json:"invalid,omitempty"`
	Interrupted   bool              `json:"interrupted"`
	StartTime     time.Time         `json:"start_time"`
	MeasuredS     float64           `json:"measured_s"`
	Config        Config            `json:"config"`
	Totals        Accounting        `json:"totals"`
	ControlTotals Accounting        `json:"control_totals"`
	EchoRate      float64           `json:"echo_rate"` // data frames answered intact per measured second
	SelfCheck     SelfCheck         `json:"self_check"`
	Stop          *StopOutcome      `json:"stop,omitempty"`
	Precision     *PrecisionOutcome `json:"precision,omitempty"`
	HealthCheck   *HealthCheck      `json:"health_check,omitempty"`
	Urgent        *UrgentOutcome    `json:"urgent,omitempty"`
	Churn         *ChurnOutcome     `json:"churn,omitempty"`
	Latency       record.Summary    `json:"latency"`
	Conns         []ConnResult      `json:"connections"`
	Loops         []LoopReport      `json:"loops,omitempty"`
}

// Summary returns the JSON-ready summary of r.
func (r *Result) Summary() Summary {
	s := Summary{Valid: r.Valid, Invalid: r.Invalid, Interrupted: r.Interrupted, StartTime: r.Start,
		MeasuredS: r.Measured.Seconds(), Config: r.Config, Totals: r.Totals, ControlTotals: r.ControlTotals,
		SelfCheck: r.SelfCheck, Stop: r.Stop, Precision: r.Precision, HealthCheck: r.HealthCheck, Urgent: r.Urgent, Churn: r.Churn, Conns: r.Conns, Loops: r.Loops}
	if r.Recorder != nil {
		s.Latency = r.Recorder.Summary()
		for _, g := range r.SelfCheck.Gates {
			if k := g.IntervalThinning(); k != 0 {
				if h, ok := r.Recorder.Histogram(g.Histogram); ok {
					cs := s.Latency.Classes[g.Histogram]
					cs.Widen(h, k)
					s.Latency.Classes[g.Histogram] = cs
				}
			}
		}
		if h, ok := r.Recorder.Histogram(ClassData); ok && r.Measured > 0 {
			s.EchoRate = float64(h.TotalCount()) / r.Measured.Seconds()
		}
	}
	return s
}

// Files written by WriteFiles.
const (
	HlogFile    = "loadgen.hlog"
	SummaryFile = "loadgen.json"
)

// WriteFiles writes the interval log (HlogFile) and the summary as indented
// JSON (SummaryFile) into dir, which must exist.
func (r *Result) WriteFiles(dir string) error {
	if r.Recorder != nil {
		if err := writeFile(filepath.Join(dir, HlogFile), func(w *bufio.Writer) error { return r.Recorder.WriteHlog(w) }); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, SummaryFile), func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r.Summary())
	})
}

func writeFile(path string, fill func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	w := bufio.NewWriter(f)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("loadgen: writing %s: %w", path, err)
	}
	return nil
}
