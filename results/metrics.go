package results

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

// Metric describes one per-run value of RunRecord.Metrics.
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
)

// Metrics is the catalogue, in report order.
var Metrics = []Metric{
	{Name: MetricThroughput, Unit: "frames/s", Label: "throughput", Better: HigherIsBetter, Gate: true,
		Describe: "data frames answered intact per second of the measured period, all sources"},
	{Name: MetricSourceMin, Unit: "frames/s", Label: "slowest source", Better: HigherIsBetter,
		Describe: "the slowest hot or steady source's frames answered intact per second of its run (per-source throughput)"},
	{Name: MetricFairness, Unit: "", Label: "fairness", Better: HigherIsBetter,
		Describe: "Jain's fairness index over the data sources' answered frames: 1 is equal shares, 1/n one source takes all"},
	{Name: MetricDataP50, Unit: "µs", Label: "data p50", Better: LowerIsBetter,
		Describe: "data frame latency, 50th percentile, measured period (from the intended send time for steady sources)"},
	{Name: MetricDataP90, Unit: "µs", Label: "data p90", Better: LowerIsBetter, Describe: "data frame latency, 90th percentile"},
	{Name: MetricDataP99, Unit: "µs", Label: "data p99", Better: LowerIsBetter, Gate: true, Describe: "data frame latency, 99th percentile"},
	{Name: MetricDataP999, Unit: "µs", Label: "data p99.9", Better: LowerIsBetter, Describe: "data frame latency, 99.9th percentile"},
	{Name: MetricDataMax, Unit: "µs", Label: "data max", Better: LowerIsBetter, Describe: "data frame latency, maximum"},
	{Name: MetricControlP50, Unit: "µs", Label: "control p50", Better: LowerIsBetter,
		Describe: "control PING round trip, 50th percentile, measured period"},
	{Name: MetricControlP90, Unit: "µs", Label: "control p90", Better: LowerIsBetter, Describe: "control PING round trip, 90th percentile"},
	{Name: MetricControlP99, Unit: "µs", Label: "control p99", Better: LowerIsBetter, Describe: "control PING round trip, 99th percentile"},
	{Name: MetricControlP999, Unit: "µs", Label: "control p99.9", Better: LowerIsBetter, Gate: true, Describe: "control PING round trip, 99.9th percentile"},
	{Name: MetricControlMax, Unit: "µs", Label: "control max", Better: LowerIsBetter, Describe: "control PING round trip, maximum"},
	{Name: MetricControlOver10ms, Unit: "", Label: "control > 10 ms", Better: LowerIsBetter,
		Describe: "control PINGs answered after more than 10 ms in the measured period, whatever the cell's control_timeout"},
	{Name: MetricFalseTimeouts, Unit: "", Label: "false timeouts", Better: LowerIsBetter,
		Describe: "the health check's false timeouts: control PINGs answered after control_timeout (default 10 ms) in the measured period, counted by the load generator (a PING never answered is lost, not a false timeout)"},
	{Name: MetricFalseRemovals, Unit: "", Label: "false removals", Better: LowerIsBetter,
		Describe: "the health check's false removals: runs of removal_after (default 3) consecutive false timeouts on one control connection, each ending a run (the node re-added, the count starting again)"},
	{Name: MetricUrgentP50, Unit: "µs", Label: "urgent p50", Better: LowerIsBetter,
		Describe: "TCP urgent byte (urgent_every) to the target's urgent answer, from the tick's intended time, 50th percentile, measured period"},
	{Name: MetricUrgentP99, Unit: "µs", Label: "urgent p99", Better: LowerIsBetter, Describe: "urgent byte to its answer, 99th percentile"},
	{Name: MetricUrgentP999, Unit: "µs", Label: "urgent p99.9", Better: LowerIsBetter, Describe: "urgent byte to its answer, 99.9th percentile"},
	{Name: MetricUrgentMax, Unit: "µs", Label: "urgent max", Better: LowerIsBetter, Describe: "urgent byte to its answer, maximum"},
	{Name: MetricUrgentCount, Unit: "", Label: "urgent answers", Better: Neutral,
		Describe: "urgent bytes answered with their own value in the measured period (the urgent latencies' count)"},
	{Name: MetricUrgentSkips, Unit: "", Label: "urgent skips", Better: LowerIsBetter,
		Describe: "urgent ticks skipped, whole run: due while their data connection still awaited the answer to its previous urgent byte (TCP has one urgent mark per connection), then sent late and measured from their own intended times, or never sent"},
	{Name: MetricUrgentWrong, Unit: "", Label: "urgent wrong bytes", Better: LowerIsBetter,
		Describe: "urgent answers carrying another byte than the one outstanding, or none outstanding, whole run (must be 0; any makes the run invalid)"},
	{Name: MetricStop, Unit: "µs", Label: "STOP", Better: LowerIsBetter,
		Describe: "STOP observation latency: from writing STOP to reading STOP_ACK, with data still flowing"},
	{Name: MetricRotationMax, Unit: "µs", Label: "rotation max", Better: LowerIsBetter,
		Describe: "longest rotation interval: the longest a ready source waited between two turns (server, whole life)"},
	{Name: MetricRoundP99, Unit: "µs", Label: "round p99", Better: LowerIsBetter,
		Describe: "owner round duration (one epoll_wait to the next), 99th percentile (server, whole life)"},
	{Name: MetricRoundMax, Unit: "µs", Label: "round max", Better: LowerIsBetter, Describe: "owner round duration, maximum"},
	{Name: MetricIngressHWM, Unit: "items", Label: "ingress HWM", Better: LowerIsBetter,
		Describe: "ingress queue high-water mark: the most cross-thread items waiting for the loop (server)"},
	{Name: MetricIdleWakeups, Unit: "/s", Label: "idle wakeups", Better: LowerIsBetter,
		Describe: "epoll_wait returns with nothing to do, per second of the server's life"},
	{Name: MetricZeroWaits, Unit: "/s", Label: "zero-timeout waits", Better: Neutral,
		Describe: "epoll_wait calls with a zero timeout (polls while work remained), per second of the server's life"},
	{Name: MetricTimerDeviation, Unit: "µs", Label: "timer deviation p99", Better: LowerIsBetter,
		Describe: "how late timers fired, 99th percentile (server)"},
	{Name: MetricServerCPU, Unit: "CPU-s/Mframe", Label: "server CPU", Better: LowerIsBetter, Gate: true,
		Describe: "server CPU seconds (user + sys, rusage at exit) per million frames it echoed"},
	{Name: MetricServerRSS, Unit: "MiB", Label: "server RSS", Better: LowerIsBetter, Describe: "server peak resident set size"},
	{Name: MetricAnomalies, Unit: "", Label: "anomalies", Better: LowerIsBetter,
		Describe: "integrity ledger: frames lost, duplicated, corrupted, unexpected or delivered to the wrong connection (must be 0; any makes the run invalid)"},
	{Name: MetricUselessAccepts, Unit: "/s", Label: "useless accepts", Better: LowerIsBetter,
		Describe: "accept turns whose first accept found the backlog empty (another loop took the connection), all loops, per second of the server's life (reference reactor with several loops); undercounts a thundering herd, whose losers the kernel mostly puts back to sleep inside epoll_wait: see loop wakeups"},
	{Name: MetricUselessAcceptsPerConn, Unit: "", Label: "useless accepts/conn", Better: LowerIsBetter,
		Describe: "useless accept turns per connection accepted, all loops, whole life"},
	{Name: MetricLoopWakeups, Unit: "/s", Label: "loop wakeups", Better: LowerIsBetter,
		Describe: "the loop threads' voluntary context switches (each sleep and wake, in epoll_wait or inside it without an event), all loops, per second of the server's life (reference reactor with several loops)"},
	{Name: MetricLoopWakeupsPerConn, Unit: "", Label: "loop wakeups/conn", Better: LowerIsBetter,
		Describe: "the loop threads' voluntary context switches per connection accepted, all loops, whole life (traffic on open connections wakes loops too)"},
	{Name: MetricAcceptQueuePeak, Unit: "conns", Label: "accept queue peak", Better: LowerIsBetter,
		Describe: "the most connections waiting in the data port's listen queues at once (accepted by the kernel, not yet by the server: Recv-Q in ss -lnt), summed over its listeners, sampled by inet_diag about every 5 ms in the server's namespace during the measured period: a sampled peak, so a lower bound of the true one"},
	{Name: MetricConnsPerLoopMin, Unit: "conns", Label: "conns/loop min", Better: Neutral,
		Describe: "connections registered on the data loop that got the fewest, whole life (control connections included where a data loop serves them)"},
	{Name: MetricConnsPerLoopMax, Unit: "conns", Label: "conns/loop max", Better: Neutral,
		Describe: "connections registered on the data loop that got the most, whole life"},
	{Name: MetricBusyMaxOverMean, Unit: "", Label: "busy max/mean", Better: LowerIsBetter,
		Describe: "the busiest data loop's busy fraction (outside blocking epoll_waits, whole life; includes time runnable but not running where loops share CPUs) over the data loops' mean: 1 even, N one loop does everything"},
	{Name: MetricCPUMaxOverMean, Unit: "", Label: "CPU max/mean", Better: LowerIsBetter,
		Describe: "the data loop thread with the most CPU time over the data loops' mean, whole life: 1 even, N one loop does everything"},
	{Name: MetricFramesJain, Unit: "", Label: "frames Jain", Better: HigherIsBetter,
		Describe: "Jain's fairness index of the frames each data loop read, whole life: 1 equal, 1/N one loop reads them all"},
	{Name: MetricHandoffP99, Unit: "µs", Label: "handoff p99", Better: LowerIsBetter,
		Describe: "mainsub: from the acceptor's accept to the connection's registration on its sub-loop, 99th percentile (server, whole life)"},
	{Name: MetricHandoffReadP99, Unit: "µs", Label: "handoff to read p99", Better: LowerIsBetter,
		Describe: "mainsub: from the acceptor's accept to the sub-loop's first read of the connection, 99th percentile (server, whole life)"},
	{Name: MetricChurnP50, Unit: "µs", Label: "churn p50", Better: LowerIsBetter,
		Describe: "churn connection (churn_rate): from its intended connect instant to the end of its one echo, 50th percentile, measured period (corrected for coordinated omission)"},
	{Name: MetricChurnP99, Unit: "µs", Label: "churn p99", Better: LowerIsBetter, Describe: "churn connection to its echo, 99th percentile"},
	{Name: MetricChurnMax, Unit: "µs", Label: "churn max", Better: LowerIsBetter, Describe: "churn connection to its echo, maximum"},
	{Name: MetricChurnRefused, Unit: "", Label: "churn refused", Better: LowerIsBetter,
		Describe: "churn connects refused (ECONNREFUSED or reset in the handshake: a full accept queue), whole run"},
	{Name: MetricChurnReset, Unit: "", Label: "churn reset", Better: LowerIsBetter,
		Describe: "churn connections reset by the target before their answer, whole run"},
	{Name: MetricChurnSkipped, Unit: "", Label: "churn skipped", Better: LowerIsBetter,
		Describe: "churn connections not opened because churn_max were open (the target slow to answer them), whole run"},
	{Name: MetricLightP99, Unit: "µs", Label: "light p99", Better: LowerIsBetter,
		Describe: "the light (steady) connections' latency, 99th percentile, measured period: class steady (from each frame's intended send time, corrected for coordinated omission) when the run has hot sources too; in runs recorded before that class, the merged service intervals of the steady sources (a lower bound once frames queue)"},
	{Name: MetricLightP999, Unit: "µs", Label: "light p99.9", Better: LowerIsBetter, Describe: "the light connections' latency, 99.9th percentile (as light p99)"},
	{Name: MetricDataSpread, Unit: "µs", Label: "data p99-p50", Better: LowerIsBetter,
		Describe: "data latency spread: 99th percentile less the median, measured period"},
	{Name: MetricDataStddev, Unit: "µs", Label: "data stddev", Better: LowerIsBetter,
		Describe: "data latency standard deviation, measured period (from the HDR histogram)"},
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
