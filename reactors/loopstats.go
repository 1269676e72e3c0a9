package reactors

import "math"

// Loop roles, as LoopStats.Role names them.
const (
	RoleLoop     = "loop"     // a loop that accepts and serves its own connections
	RoleAcceptor = "acceptor" // mainsub's loop 0: accepts, hands off, serves control
	RoleSubLoop  = "sub-loop" // mainsub's loops 1..N: serve what the acceptor hands them
	RoleData     = "data"     // prio-thread's data loop
	RoleControl  = "control"  // prio-thread's control loop
	RoleWorker   = "worker"   // a oneshot worker on the shared epoll fd
)

// LoopStats is one loop's own figures, from its counters as last
// published (at most about a millisecond old while it runs; final once the
// reactor has stopped).
type LoopStats struct {
	Loop int    `json:"loop"`
	Role string `json:"role"`
	// Tid is the loop's OS thread (0 before it ran).
	Tid int `json:"tid,omitempty"`
	// Conns is the connections registered on this loop (accepted by it, or
	// handed to it), control connections included.
	Conns uint64 `json:"conns"`
	// Frames is the frames it read (DATA and PING).
	Frames uint64 `json:"frames"`
	// Busy is BusyNs over the loop's lifetime so far; CPU its thread's CPU
	// time over the same span. On CPUs the loops share, Busy includes time
	// runnable but not running, and CPU does not.
	Busy float64 `json:"busy"`
	CPU  float64 `json:"cpu"`
	// AcceptWakeups, Accepts, UselessAcceptWakeups, Handoffs, HandoffsIn
	// and HandoffFull are the loop's counters of those names.
	AcceptWakeups        uint64 `json:"accept_wakeups"`
	Accepts              uint64 `json:"accepts"`
	UselessAcceptWakeups uint64 `json:"useless_accept_wakeups"`
	Handoffs             uint64 `json:"handoffs,omitempty"`
	HandoffsIn           uint64 `json:"handoffs_in,omitempty"`
	HandoffFull          uint64 `json:"handoff_full,omitempty"`
	// Wakeups is the loop thread's voluntary context switches since the
	// loop started: each time it slept (in epoll_wait, or woken and put
	// back to sleep inside it without an event) and was woken again. A
	// listener shared without EPOLLEXCLUSIVE wakes every waiting loop for
	// each connection, though the kernel may send all but one back to
	// sleep before epoll_wait returns: this counts them, accept calls do not.
	Wakeups uint64 `json:"wakeups"`
	// RingEnters, Completions, EnobufsRearms and CQOverflowFlushes are the
	// loop's counters of those names: its io_uring's traffic on a
	// completion design, absent on the readiness designs.
	RingEnters        uint64 `json:"ring_enters,omitempty"`
	Completions       uint64 `json:"completions,omitempty"`
	EnobufsRearms     uint64 `json:"enobufs_rearms,omitempty"`
	CQOverflowFlushes uint64 `json:"cq_overflow_flushes,omitempty"`
	// StopObservedNs is how long after the STOP was issued this loop first
	// saw it; -1 while it has not (or no stop was requested).
	StopObservedNs int64 `json:"stop_observed_ns"`
}

// DataLoop reports whether the loop serves data connections (every role
// but mainsub's acceptor and prio-thread's control loop).
func (s LoopStats) DataLoop() bool { return s.Role != RoleAcceptor && s.Role != RoleControl }

// Imbalance compares the data loops of a reactor (LoopStats.DataLoop):
// 1 is perfectly even for every figure. Jain's fairness index of x over n
// loops is (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one loop has
// everything; a max/mean ratio is 1 when even and n when one loop has it
// all. A figure whose sum is 0 is reported as 1 (nothing to spread).
type Imbalance struct {
	DataLoops       int     `json:"data_loops"`
	BusyMaxOverMean float64 `json:"busy_max_over_mean"`
	CPUMaxOverMean  float64 `json:"cpu_max_over_mean"`
	FramesJain      float64 `json:"frames_jain"`
	ConnsJain       float64 `json:"conns_jain"`
}

// ImbalanceOf computes Imbalance over the data loops of per; nil when
// there are fewer than two.
func ImbalanceOf(per []LoopStats) *Imbalance {
	var busy, cpu, frames, conns []float64
	for _, s := range per {
		if !s.DataLoop() {
			continue
		}
		busy = append(busy, s.Busy)
		cpu = append(cpu, s.CPU)
		frames = append(frames, float64(s.Frames))
		conns = append(conns, float64(s.Conns))
	}
	if len(busy) < 2 {
		return nil
	}
	return &Imbalance{DataLoops: len(busy), BusyMaxOverMean: MaxOverMean(busy), CPUMaxOverMean: MaxOverMean(cpu),
		FramesJain: JainIndex(frames), ConnsJain: JainIndex(conns)}
}

// JainIndex is Jain's fairness index of xs: (Σx)² / (n·Σx²), in [1/n, 1];
// 1 for an empty or all-zero xs.
func JainIndex(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// MaxOverMean is max(xs)/mean(xs), in [1, n]; 1 for an empty or all-zero xs.
func MaxOverMean(xs []float64) float64 {
	var sum float64
	hi := math.Inf(-1)
	for _, x := range xs {
		sum += x
		hi = max(hi, x)
	}
	if sum == 0 {
		return 1
	}
	return hi / (sum / float64(len(xs)))
}
