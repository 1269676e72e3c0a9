package results

import (
	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results/record"
)

// Better says which direction of a metric is an improvement.
type Better int8

const (
	// Neutral metrics are reported, never judged better or worse.
	Neutral Better = iota
	// LowerIsBetter: latencies, CPU, memory, anomalies.
	LowerIsBetter
	// HigherIsBetter: throughput, fairness.
	HigherIsBetter
)

// Metric is one entry of the catalogue: a per-run value of
// RunRecord.Metrics, described for the reports and computed from the
// run's result, so a metric the reports describe is one the runs compute
// and the other way round.
type Metric struct {
	// Name is the key in RunRecord.Metrics: lower case, digits and '_'.
	Name string
	// Unit is printed after values ("frames/s", "µs", "MiB", "" for a
	// plain number).
	Unit string
	// Label is a short column heading.
	Label string
	// Describe says what is measured, where it comes from and over which
	// period.
	Describe string
	Better   Better
	// Gate marks the metrics `compare` judges by default: the headline
	// figures whose regression should stop a merge.
	Gate bool
	// Absent says when a run has no value of the metric, besides a run
	// whose figures' source left nothing: the load generator's summary for
	// its figures, the lab's record of the server for the server's. ""
	// when the source alone decides.
	Absent string
	// Compute is the metric's value for run; ok is false exactly when
	// the run has no value of it (Absent's conditions, or no source). It
	// is nil only in a Metric made for a name the catalogue does not know.
	Compute func(run *MeasuredRun) (value float64, ok bool)
}

// The metric names. Latencies are microseconds; "measured period" is the
// load generator's, after the warm-up; the server's figures (rotation,
// round, ingress, wakeups, CPU, RSS) cover its whole life, warm-up
// included, and are absent for a black-box target.
const (
	MetricThroughput      = "throughput"
	MetricSourceMin       = "source_min"
	MetricFairness        = "fairness"
	MetricDataP50         = "data_p50"
	MetricDataP90         = "data_p90"
	MetricDataP99         = "data_p99"
	MetricDataP999        = "data_p999"
	MetricDataMax         = "data_max"
	MetricControlP50      = "control_p50"
	MetricControlP90      = "control_p90"
	MetricControlP99      = "control_p99"
	MetricControlP999     = "control_p999"
	MetricControlMax      = "control_max"
	MetricControlOver10ms = "control_over_10ms"
	MetricFalseTimeouts   = "control_false_timeouts"
	MetricFalseRemovals   = "control_false_removals"
	MetricUrgentP50       = "urgent_p50"
	MetricUrgentP99       = "urgent_p99"
	MetricUrgentP999      = "urgent_p999"
	MetricUrgentMax       = "urgent_max"
	MetricUrgentCount     = "urgent_count"
	MetricUrgentSkips     = "urgent_skips"
	MetricUrgentWrong     = "urgent_mismatches"
	MetricStop            = "stop"
	MetricRotationMax     = "rotation_max"
	MetricRoundP99        = "round_p99"
	MetricRoundMax        = "round_max"
	MetricIngressHWM      = "ingress_hwm"
	MetricIdleWakeups     = "idle_wakeups"
	MetricZeroWaits       = "zero_timeout_waits"
	MetricTimerDeviation  = "timer_deviation_p99"
	MetricServerCPU       = "server_cpu"
	MetricServerRSS       = "server_rss"
	MetricAnomalies       = "anomalies"

	// The multi-loop figures: a reference reactor's per-loop statistics
	// (reactors.LoopStats; the server's whole life, absent for a one-loop
	// design where they say nothing), the lab's accept queue samples, the
	// churn class and the light (steady) connections.
	MetricUselessAccepts        = "useless_accepts"
	MetricUselessAcceptsPerConn = "useless_accepts_per_conn"
	MetricLoopWakeups           = "loop_wakeups"
	MetricLoopWakeupsPerConn    = "loop_wakeups_per_conn"
	MetricAcceptQueuePeak       = "accept_queue_peak"
	MetricConnsPerLoopMin       = "conns_per_loop_min"
	MetricConnsPerLoopMax       = "conns_per_loop_max"
	MetricBusyMaxOverMean       = "busy_max_over_mean"
	MetricCPUMaxOverMean        = "cpu_max_over_mean"
	MetricFramesJain            = "frames_jain"
	MetricHandoffP99            = "handoff_p99"
	MetricHandoffReadP99        = "handoff_first_read_p99"
	MetricChurnP50              = "churn_p50"
	MetricChurnP99              = "churn_p99"
	MetricChurnMax              = "churn_max"
	MetricChurnRefused          = "churn_refused"
	MetricChurnReset            = "churn_reset"
	MetricChurnSkipped          = "churn_skipped"
	MetricLightP99              = "light_p99"
	MetricLightP999             = "light_p999"
	MetricDataSpread            = "data_spread"
	MetricDataStddev            = "data_stddev"

	// The loop threads' time: the lab's samples of the server's threads
	// over the measured period (harness.CellResult.LoopTimes), for a
	// reference reactor and a black box alike; each the mean over the
	// loop threads of a share of the period.
	MetricLoopWaiting  = "loop_waiting"
	MetricLoopServing  = "loop_serving"
	MetricLoopBlocked  = "loop_blocked"
	MetricLoopRunnable = "loop_runnable"

	// The costs per frame: the server's threads over the measured period
	// (the lab's /proc samples of a pinned server's CPUs, lab.CPUTicks),
	// and a reference reactor's calls for events over its whole life.
	MetricServerCPUPeriod   = "server_cpu_period"
	MetricServerSwitches    = "server_switches_per_frame"
	MetricWaitCallsPerFrame = "wait_calls_per_frame"
)

// Metrics is the catalogue, in report order.
var Metrics = []Metric{
	{Name: MetricThroughput, Unit: "frames/s", Label: "throughput", Better: HigherIsBetter, Gate: true,
		Describe: "data frames answered intact per second of the measured period, all sources",
		Compute:  fromLoad(func(s *loadgen.Summary) (float64, bool) { return s.EchoRate, true })},
	{Name: MetricSourceMin, Unit: "frames/s", Label: "slowest source", Better: HigherIsBetter,
		Describe: "the slowest hot or steady source's frames answered intact per second of its run (per-source throughput)",
		Absent:   "without a hot or steady source, or without the run's length",
		Compute:  fromLoad(slowestSource)},
	{Name: MetricFairness, Unit: "", Label: "fairness", Better: HigherIsBetter,
		Describe: "Jain's fairness index over the data sources' answered frames: 1 is equal shares, 1/n one source takes all",
		Absent:   "without a hot or steady source, the run's length, or a frame answered",
		Compute:  fromLoad(fairness)},
	{Name: MetricDataP50, Unit: "µs", Label: "data p50", Better: LowerIsBetter,
		Describe: "data frame latency, 50th percentile, measured period (from the intended send time for steady sources)",
		Absent:   "without data samples",
		Compute:  latency(loadgen.ClassData, func(cs record.ClassSummary) float64 { return cs.P50Us })},
	{Name: MetricDataP90, Unit: "µs", Label: "data p90", Better: LowerIsBetter, Describe: "data frame latency, 90th percentile",
		Absent:  "without data samples",
		Compute: latency(loadgen.ClassData, func(cs record.ClassSummary) float64 { return cs.P90Us })},
	{Name: MetricDataP99, Unit: "µs", Label: "data p99", Better: LowerIsBetter, Gate: true, Describe: "data frame latency, 99th percentile",
		Absent:  "without data samples",
		Compute: latency(loadgen.ClassData, func(cs record.ClassSummary) float64 { return cs.P99Us })},
	{Name: MetricDataP999, Unit: "µs", Label: "data p99.9", Better: LowerIsBetter, Describe: "data frame latency, 99.9th percentile",
		Absent:  "without data samples",
		Compute: latency(loadgen.ClassData, func(cs record.ClassSummary) float64 { return cs.P999Us })},
	{Name: MetricDataMax, Unit: "µs", Label: "data max", Better: LowerIsBetter, Describe: "data frame latency, maximum",
		Absent:  "without data samples",
		Compute: latency(loadgen.ClassData, func(cs record.ClassSummary) float64 { return cs.MaxUs })},
	{Name: MetricControlP50, Unit: "µs", Label: "control p50", Better: LowerIsBetter,
		Describe: "control PING round trip, 50th percentile, measured period",
		Absent:   "without control samples",
		Compute:  latency(loadgen.ClassControl, func(cs record.ClassSummary) float64 { return cs.P50Us })},
	{Name: MetricControlP90, Unit: "µs", Label: "control p90", Better: LowerIsBetter, Describe: "control PING round trip, 90th percentile",
		Absent:  "without control samples",
		Compute: latency(loadgen.ClassControl, func(cs record.ClassSummary) float64 { return cs.P90Us })},
	{Name: MetricControlP99, Unit: "µs", Label: "control p99", Better: LowerIsBetter, Describe: "control PING round trip, 99th percentile",
		Absent:  "without control samples",
		Compute: latency(loadgen.ClassControl, func(cs record.ClassSummary) float64 { return cs.P99Us })},
	{Name: MetricControlP999, Unit: "µs", Label: "control p99.9", Better: LowerIsBetter, Gate: true, Describe: "control PING round trip, 99.9th percentile",
		Absent:  "without control samples",
		Compute: latency(loadgen.ClassControl, func(cs record.ClassSummary) float64 { return cs.P999Us })},
	{Name: MetricControlMax, Unit: "µs", Label: "control max", Better: LowerIsBetter, Describe: "control PING round trip, maximum",
		Absent:  "without control samples",
		Compute: latency(loadgen.ClassControl, func(cs record.ClassSummary) float64 { return cs.MaxUs })},
	{Name: MetricControlOver10ms, Unit: "", Label: "control > 10 ms", Better: LowerIsBetter,
		Describe: "control PINGs answered after more than 10 ms in the measured period, whatever the cell's control_timeout",
		Absent:   "without control samples, or when the interval log cannot be read",
		Compute:  controlOver10ms},
	{Name: MetricFalseTimeouts, Unit: "", Label: "false timeouts", Better: LowerIsBetter,
		Describe: "the health check's false timeouts: control PINGs answered after control_timeout (default 10 ms) in the measured period, counted by the load generator (a PING never answered is lost, not a false timeout)",
		Absent:   "without control probes (no health check in the summary)",
		Compute:  healthCheck(func(hc *loadgen.HealthCheck) uint64 { return hc.FalseTimeouts })},
	{Name: MetricFalseRemovals, Unit: "", Label: "false removals", Better: LowerIsBetter,
		Describe: "the health check's false removals: runs of removal_after (default 3) consecutive false timeouts on one control connection, each ending a run (the node re-added, the count starting again)",
		Absent:   "without control probes (no health check in the summary)",
		Compute:  healthCheck(func(hc *loadgen.HealthCheck) uint64 { return hc.FalseRemovals })},
	{Name: MetricUrgentP50, Unit: "µs", Label: "urgent p50", Better: LowerIsBetter,
		Describe: "TCP urgent byte (urgent_every) to the target's urgent answer, from the tick's intended time, 50th percentile, measured period",
		Absent:   "without urgent bytes, or none answered in the measured period",
		Compute:  urgentLatency(func(cs record.ClassSummary) float64 { return cs.P50Us })},
	{Name: MetricUrgentP99, Unit: "µs", Label: "urgent p99", Better: LowerIsBetter, Describe: "urgent byte to its answer, 99th percentile",
		Absent:  "without urgent bytes, or none answered in the measured period",
		Compute: urgentLatency(func(cs record.ClassSummary) float64 { return cs.P99Us })},
	{Name: MetricUrgentP999, Unit: "µs", Label: "urgent p99.9", Better: LowerIsBetter, Describe: "urgent byte to its answer, 99.9th percentile",
		Absent:  "without urgent bytes, or none answered in the measured period",
		Compute: urgentLatency(func(cs record.ClassSummary) float64 { return cs.P999Us })},
	{Name: MetricUrgentMax, Unit: "µs", Label: "urgent max", Better: LowerIsBetter, Describe: "urgent byte to its answer, maximum",
		Absent:  "without urgent bytes, or none answered in the measured period",
		Compute: urgentLatency(func(cs record.ClassSummary) float64 { return cs.MaxUs })},
	{Name: MetricUrgentCount, Unit: "", Label: "urgent answers", Better: Neutral,
		Describe: "urgent bytes answered with their own value in the measured period (the urgent latencies' count)",
		Absent:   "without urgent bytes",
		Compute:  urgent(func(u *loadgen.UrgentOutcome, cs record.ClassSummary) float64 { return float64(cs.Count) })},
	{Name: MetricUrgentSkips, Unit: "", Label: "urgent skips", Better: LowerIsBetter,
		Describe: "urgent ticks skipped, whole run: due while their data connection still awaited the answer to its previous urgent byte (TCP has one urgent mark per connection), then sent late and measured from their own intended times, or never sent",
		Absent:   "without urgent bytes",
		Compute:  urgent(func(u *loadgen.UrgentOutcome, _ record.ClassSummary) float64 { return float64(u.Skipped) })},
	{Name: MetricUrgentWrong, Unit: "", Label: "urgent wrong bytes", Better: LowerIsBetter,
		Describe: "urgent answers carrying another byte than the one outstanding, or none outstanding, whole run (must be 0; any makes the run invalid)",
		Absent:   "without urgent bytes",
		Compute: urgent(func(u *loadgen.UrgentOutcome, _ record.ClassSummary) float64 {
			return float64(u.Mismatched + u.Unsolicited)
		})},
	{Name: MetricStop, Unit: "µs", Label: "STOP", Better: LowerIsBetter,
		Describe: "STOP observation latency: from writing STOP to reading STOP_ACK, with data still flowing",
		Absent:   "without a STOP probe, or without its acknowledgement",
		Compute:  fromLoad(stopLatency)},
	{Name: MetricRotationMax, Unit: "µs", Label: "rotation max", Better: LowerIsBetter,
		Describe: "longest rotation interval: the longest a ready source waited between two turns (server, whole life)",
		Absent:   "for a black box, or without rotations recorded",
		Compute:  reactorHist(reactors.HistRotation, func(h reactors.HistSummary) float64 { return float64(h.Max) / 1e3 })},
	{Name: MetricRoundP99, Unit: "µs", Label: "round p99", Better: LowerIsBetter,
		Describe: "owner round duration (one epoll_wait to the next), 99th percentile (server, whole life)",
		Absent:   "for a black box, or without rounds recorded",
		Compute:  reactorHist(reactors.HistRound, func(h reactors.HistSummary) float64 { return float64(h.P99) / 1e3 })},
	{Name: MetricRoundMax, Unit: "µs", Label: "round max", Better: LowerIsBetter, Describe: "owner round duration, maximum",
		Absent:  "for a black box, or without rounds recorded",
		Compute: reactorHist(reactors.HistRound, func(h reactors.HistSummary) float64 { return float64(h.Max) / 1e3 })},
	{Name: MetricIngressHWM, Unit: "items", Label: "ingress HWM", Better: LowerIsBetter,
		Describe: "ingress queue high-water mark: the most cross-thread items waiting for the loop (server)",
		Absent:   "for a black box",
		Compute:  fromReactor(func(st reactors.Stats, _ float64) (float64, bool) { return float64(st.Counters.IngressMaxDepth), true })},
	{Name: MetricIdleWakeups, Unit: "/s", Label: "idle wakeups", Better: LowerIsBetter,
		Describe: "epoll_wait returns with nothing to do, per second of the server's life",
		Absent:   "for a black box, or without the server's life",
		Compute:  fromReactor(func(st reactors.Stats, life float64) (float64, bool) { return perSecond(st.Counters.IdleWakeups, life) })},
	{Name: MetricZeroWaits, Unit: "/s", Label: "zero-timeout waits", Better: Neutral,
		Describe: "epoll_wait calls with a zero timeout (polls while work remained), per second of the server's life",
		Absent:   "for a black box, or without the server's life",
		Compute: fromReactor(func(st reactors.Stats, life float64) (float64, bool) {
			return perSecond(st.Counters.ZeroTimeoutWaits, life)
		})},
	{Name: MetricTimerDeviation, Unit: "µs", Label: "timer deviation p99", Better: LowerIsBetter,
		Describe: "how late timers fired, 99th percentile (server)",
		Absent:   "for a black box, or without timers fired",
		Compute:  reactorHist(reactors.HistTimerLate, func(h reactors.HistSummary) float64 { return float64(h.P99) / 1e3 })},
	{Name: MetricServerCPU, Unit: "CPU-s/Mframe", Label: "server CPU", Better: LowerIsBetter, Gate: true,
		Describe: "server CPU seconds (user + sys, rusage at exit) per million frames it echoed",
		Absent:   "without the lab's record of the server, or without a frame echoed",
		Compute:  serverCPU},
	{Name: MetricServerCPUPeriod, Unit: "CPU-s/Mframe", Label: "server CPU (period)", Better: LowerIsBetter,
		Describe: "the server's threads' time on a CPU (schedstat, its process group: user and system time, the kernel's TCP work done in their context included) between the first and last /proc samples inside the measured period, per million data frames answered in that span at the period's rate",
		Absent:   "without the lab's samples of a pinned server's CPUs carrying its threads' time, two of them inside the measured period, or a frame answered",
		Compute:  serverCPUPeriod},
	{Name: MetricServerSwitches, Unit: "", Label: "ctx switches/frame", Better: LowerIsBetter,
		Describe: "the times the server's threads were put on a CPU (schedstat's count: one per context switch into them, voluntary or not) over the same span as server CPU (period), per data frame answered in it",
		Absent:   "as server CPU (period), and where the kernel does not count the switches",
		Compute:  serverSwitchesPerFrame},
	{Name: MetricWaitCallsPerFrame, Unit: "", Label: "wait calls/frame", Better: LowerIsBetter,
		Describe: "a reference reactor's calls that wait for or collect its events, epoll_wait (blocking or not) plus io_uring_enter, per DATA frame it echoed, whole life (reactors.Counters.EpollWaits + RingEnters): on a completion design, whose receives and sends go through its ring, these are its data path's calls; on a readiness design its reads and writes come on top and are not counted (the count is a lower bound of its calls)",
		Absent:   "for a black box, whose calls are not known, or without a frame echoed",
		Compute:  waitCallsPerFrame},
	{Name: MetricServerRSS, Unit: "MiB", Label: "server RSS", Better: LowerIsBetter, Describe: "server peak resident set size",
		Absent:  "without the lab's record of the server's peak RSS",
		Compute: serverRSS},
	{Name: MetricAnomalies, Unit: "", Label: "anomalies", Better: LowerIsBetter,
		Describe: "integrity ledger: frames lost, duplicated, corrupted, unexpected or delivered to the wrong connection (must be 0; any makes the run invalid)",
		Compute:  fromLoad(anomalies)},
	{Name: MetricUselessAccepts, Unit: "/s", Label: "useless accepts", Better: LowerIsBetter,
		Describe: "accept turns whose first accept found the backlog empty (another loop took the connection), all loops, per second of the server's life (reference reactor with several loops); undercounts a thundering herd, whose losers the kernel mostly puts back to sleep inside epoll_wait: see loop wakeups",
		Absent:   "without several data loops (a black box, a one-loop design), or without the server's life",
		Compute: fromLoops(func(st reactors.Stats, life float64) (float64, bool) {
			return perSecond(st.Counters.UselessAcceptWakeups, life)
		})},
	{Name: MetricUselessAcceptsPerConn, Unit: "", Label: "useless accepts/conn", Better: LowerIsBetter,
		Describe: "useless accept turns per connection accepted, all loops, whole life",
		Absent:   "without several data loops, or without a connection accepted",
		Compute: fromLoops(func(st reactors.Stats, _ float64) (float64, bool) {
			return perAccept(st.Counters.UselessAcceptWakeups, st.Counters.Accepts)
		})},
	{Name: MetricLoopWakeups, Unit: "/s", Label: "loop wakeups", Better: LowerIsBetter,
		Describe: "the loop threads' voluntary context switches (each sleep and wake, in epoll_wait or inside it without an event), all loops, per second of the server's life (reference reactor with several loops)",
		Absent:   "without several data loops, or without the server's life",
		Compute:  fromLoops(func(st reactors.Stats, life float64) (float64, bool) { return perSecond(loopWakeups(st), life) })},
	{Name: MetricLoopWakeupsPerConn, Unit: "", Label: "loop wakeups/conn", Better: LowerIsBetter,
		Describe: "the loop threads' voluntary context switches per connection accepted, all loops, whole life (traffic on open connections wakes loops too)",
		Absent:   "without several data loops, or without a connection accepted",
		Compute: fromLoops(func(st reactors.Stats, _ float64) (float64, bool) {
			return perAccept(loopWakeups(st), st.Counters.Accepts)
		})},
	{Name: MetricAcceptQueuePeak, Unit: "conns", Label: "accept queue peak", Better: LowerIsBetter,
		Describe: "the most connections waiting in the data port's listen queues at once (accepted by the kernel, not yet by the server: Recv-Q in ss -lnt), summed over its listeners, sampled by inet_diag about every 5 ms in the server's namespace during the measured period: a sampled peak, so a lower bound of the true one",
		Absent:   "without the lab's accept queue samples in the measured period (loopback, a failed sampler)",
		Compute:  acceptQueuePeak},
	{Name: MetricConnsPerLoopMin, Unit: "conns", Label: "conns/loop min", Better: Neutral,
		Describe: "connections registered on the data loop that got the fewest, whole life (control connections included where a data loop serves them)",
		Absent:   "without several data loops",
		Compute:  fromLoops(func(st reactors.Stats, _ float64) (float64, bool) { lo, _ := connsPerLoop(st); return lo, true })},
	{Name: MetricConnsPerLoopMax, Unit: "conns", Label: "conns/loop max", Better: Neutral,
		Describe: "connections registered on the data loop that got the most, whole life",
		Absent:   "without several data loops",
		Compute:  fromLoops(func(st reactors.Stats, _ float64) (float64, bool) { _, hi := connsPerLoop(st); return hi, true })},
	{Name: MetricBusyMaxOverMean, Unit: "", Label: "busy max/mean", Better: LowerIsBetter,
		Describe: "the busiest data loop's busy fraction (outside blocking epoll_waits, whole life; includes time runnable but not running where loops share CPUs) over the data loops' mean: 1 even, N one loop does everything",
		Absent:   "without several data loops",
		Compute:  fromLoops(func(st reactors.Stats, _ float64) (float64, bool) { return st.Imbalance.BusyMaxOverMean, true })},
	{Name: MetricCPUMaxOverMean, Unit: "", Label: "CPU max/mean", Better: LowerIsBetter,
		Describe: "the data loop thread with the most CPU time over the data loops' mean, whole life: 1 even, N one loop does everything",
		Absent:   "without several data loops",
		Compute:  fromLoops(func(st reactors.Stats, _ float64) (float64, bool) { return st.Imbalance.CPUMaxOverMean, true })},
	{Name: MetricFramesJain, Unit: "", Label: "frames Jain", Better: HigherIsBetter,
		Describe: "Jain's fairness index of the frames each data loop read, whole life: 1 equal, 1/N one loop reads them all",
		Absent:   "without several data loops",
		Compute:  fromLoops(func(st reactors.Stats, _ float64) (float64, bool) { return st.Imbalance.FramesJain, true })},
	{Name: MetricHandoffP99, Unit: "µs", Label: "handoff p99", Better: LowerIsBetter,
		Describe: "mainsub: from the acceptor's accept to the connection's registration on its sub-loop, 99th percentile (server, whole life)",
		Absent:   "without several data loops, or without handoffs recorded (every design but mainsub)",
		Compute:  loopsHist(reactors.HistHandoff)},
	{Name: MetricHandoffReadP99, Unit: "µs", Label: "handoff to read p99", Better: LowerIsBetter,
		Describe: "mainsub: from the acceptor's accept to the sub-loop's first read of the connection, 99th percentile (server, whole life)",
		Absent:   "without several data loops, or without handoffs recorded (every design but mainsub)",
		Compute:  loopsHist(reactors.HistHandoffFirstRead)},
	{Name: MetricChurnP50, Unit: "µs", Label: "churn p50", Better: LowerIsBetter,
		Describe: "churn connection (churn_rate): from its intended connect instant to the end of its one echo, 50th percentile, measured period (corrected for coordinated omission)",
		Absent:   "without churn, or no churn connection measured",
		Compute:  churnLatency(func(cs record.ClassSummary) float64 { return cs.P50Us })},
	{Name: MetricChurnP99, Unit: "µs", Label: "churn p99", Better: LowerIsBetter, Describe: "churn connection to its echo, 99th percentile",
		Absent:  "without churn, or no churn connection measured",
		Compute: churnLatency(func(cs record.ClassSummary) float64 { return cs.P99Us })},
	{Name: MetricChurnMax, Unit: "µs", Label: "churn max", Better: LowerIsBetter, Describe: "churn connection to its echo, maximum",
		Absent:  "without churn, or no churn connection measured",
		Compute: churnLatency(func(cs record.ClassSummary) float64 { return cs.MaxUs })},
	{Name: MetricChurnRefused, Unit: "", Label: "churn refused", Better: LowerIsBetter,
		Describe: "churn connects refused (ECONNREFUSED or reset in the handshake: a full accept queue), whole run",
		Absent:   "without churn",
		Compute:  churn(func(o *loadgen.ChurnOutcome) uint64 { return o.Refused })},
	{Name: MetricChurnReset, Unit: "", Label: "churn reset", Better: LowerIsBetter,
		Describe: "churn connections reset by the target before their answer, whole run",
		Absent:   "without churn",
		Compute:  churn(func(o *loadgen.ChurnOutcome) uint64 { return o.Reset })},
	{Name: MetricChurnSkipped, Unit: "", Label: "churn skipped", Better: LowerIsBetter,
		Describe: "churn connections not opened because churn_max were open (the target slow to answer them), whole run",
		Absent:   "without churn",
		Compute:  churn(func(o *loadgen.ChurnOutcome) uint64 { return o.Skipped })},
	{Name: MetricLightP99, Unit: "µs", Label: "light p99", Better: LowerIsBetter,
		Describe: "the light (steady) connections' latency, 99th percentile, measured period: class steady (from each frame's intended send time, corrected for coordinated omission) when the run has hot sources too; in runs recorded before that class, the merged service intervals of the steady sources (a lower bound once frames queue)",
		Absent:   "without several data loops, data samples or light samples, or when the interval log cannot be read",
		Compute:  lightLatency(99)},
	{Name: MetricLightP999, Unit: "µs", Label: "light p99.9", Better: LowerIsBetter, Describe: "the light connections' latency, 99.9th percentile (as light p99)",
		Absent:  "without several data loops, data samples or light samples, or when the interval log cannot be read",
		Compute: lightLatency(99.9)},
	{Name: MetricDataSpread, Unit: "µs", Label: "data p99-p50", Better: LowerIsBetter,
		Describe: "data latency spread: 99th percentile less the median, measured period",
		Absent:   "without several data loops or data samples, or when the interval log cannot be read",
		Compute:  dataSpread},
	{Name: MetricDataStddev, Unit: "µs", Label: "data stddev", Better: LowerIsBetter,
		Describe: "data latency standard deviation, measured period (from the HDR histogram)",
		Absent:   "without several data loops or data samples, or when the interval log cannot be read",
		Compute:  dataStddev},
	{Name: MetricLoopWaiting, Unit: "%", Label: "loop waiting", Better: Neutral,
		Describe: "the server's loop threads (seen in an event wait, or on a CPU a tenth of the period) asleep in their event wait, as a share of the measured period, mean over the loop threads: /proc samples of every thread's state and system call every 20 ms, the sleep split between the wait and other calls by the samples",
		Absent:   "without the lab's samples of the server's threads in the measured period, or without a loop thread",
		Compute:  loopShare(func(s diagnose.ThreadShares) float64 { return s.Waiting })},
	{Name: MetricLoopServing, Unit: "%", Label: "loop serving", Better: Neutral,
		Describe: "the server's loop threads on a CPU (schedstat), as a share of the measured period, mean over the loop threads",
		Absent:   "without the lab's samples of the server's threads in the measured period, a loop thread, or its schedstat",
		Compute:  loopShare(func(s diagnose.ThreadShares) float64 { return s.Serving })},
	{Name: MetricLoopBlocked, Unit: "%", Label: "loop blocked", Better: Neutral,
		Describe: "the server's loop threads asleep in a system call other than their event wait (a lock's futex, a sleep, a blocking read; a Go runtime parks idle threads in futex), as a share of the measured period, mean over the loop threads",
		Absent:   "without the lab's samples of the server's threads in the measured period, or without a loop thread",
		Compute:  loopShare(func(s diagnose.ThreadShares) float64 { return s.Blocked })},
	{Name: MetricLoopRunnable, Unit: "%", Label: "loop runnable", Better: Neutral,
		Describe: "the server's loop threads runnable but waiting for a CPU (schedstat's run delay), as a share of the measured period, mean over the loop threads",
		Absent:   "without the lab's samples of the server's threads in the measured period, a loop thread, or its schedstat",
		Compute:  loopShare(func(s diagnose.ThreadShares) float64 { return s.Runnable })},
}

// MetricByName returns the catalogue entry called name.
func MetricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}
