package diagnose

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
	"github.com/reactorlab/reactorlab/results/figure"
)

// Class is what a loop thread was doing over the window.
type Class string

// The classes, in the order Classify tries them: the first whose rule
// holds is the thread's.
const (
	// Spinning: CPU spent with waits that do not block, named on two
	// independent signals (Method).
	Spinning Class = "spinning"
	// WakingItself: woken far more often than work arrived, by tokens
	// its own process's threads wrote to an eventfd or pipe of its set,
	// named on two independent signals (Method).
	WakingItself Class = "waking itself"
	// Blocked: held in a system call that is not its event wait for a
	// significant share of the window while work waited for it.
	Blocked Class = "blocked"
	// Starved: runnable but waiting for a CPU at least as long as it ran.
	Starved Class = "starved"
	// Serving: CPU spent on work, without two signals of a spin.
	Serving Class = "serving"
	// Waiting: little CPU, not held anywhere work waited for it.
	Waiting Class = "waiting"
)

// Finding reports whether the class is a finding (exit 1): spinning,
// waking itself, blocked or starved; waiting and serving are not.
func (c Class) Finding() bool {
	return c == Spinning || c == WakingItself || c == Blocked || c == Starved
}

// The rules' figures. Each is a share of the window or of the samples,
// derived in its comment, never tuned to a test.
const (
	// loopCPUShare: a thread that ran at least a tenth of the window is
	// looked at even if it was never seen in an event wait (a spinner
	// never is: it never sleeps; nor is a loop whose waits always find
	// work), and is "serving" rather than "waiting". An idle loop wakes
	// for timers and housekeeping and runs well under 1%. A thread that
	// only waited for a CPU that long is not looked at: a runtime's
	// monitor thread (Go's sysmon) that wakes every few milliseconds on a
	// busy machine waits so, and is no loop; so a loop starved below a
	// tenth of the window's CPU and never seen in its wait is not judged.
	loopCPUShare = 10 // per cent of the window
	// blockedShare: a thread held in one call other than its wait in at
	// least a third of the samples was kept from its events for a third
	// of the window: long enough that its clients see it.
	blockedShare = 3 // 1/blockedShare of the samples
	// perRoundCPU: a loop that waits for its events blocks once per
	// round; a round that runs 2.5 ms of CPU without blocking is work of
	// hundreds of events, or a wait that did not block. R4's spinner rule
	// uses the same figure (conformance/cases r4SpinnerLimit, measured).
	perRoundCPU = 2500 * time.Microsecond
	// minReadCalls: the read calls that must be seen before their yield
	// says anything: a thousand calls in the window is past what an idle
	// loop makes (a few per second) and far under what a read spin makes
	// (hundreds of thousands per second).
	minReadCalls = 1000
	// idleWriteLooks: write interest held on a socket with an empty send
	// queue in at least half the looks. A correct loop holds EPOLLOUT only
	// while the kernel refused its bytes (the send queue is then full), and
	// drops it once they are out; on loopback the queue empties as soon as
	// the peer reads, so a correct loop is seen so in few looks at most.
	idleWriteLooks = 2 // 1/idleWriteLooks of the looks
	// minLooks: fewer looks than 3 do not speak for half the window.
	minLooks = 3
	// fullTableLooks: a listener with connections queued, held
	// level-triggered for EPOLLIN in a set, while the process's table is
	// full, in at least half the looks. Each wait on that set returns at
	// once and each accept fails with EMFILE until a descriptor frees; a
	// correct loop drops the listener from its set (or sheds a
	// connection) on the first EMFILE, so a look finds it so for a round
	// at most.
	fullTableLooks = 2 // 1/fullTableLooks of the looks
	// neverReadLooks: one connection of the set registered
	// level-triggered for EPOLLIN, with bytes in its receive queue at a
	// look and at the look before, and not one byte of it read between
	// them (tcpi_bytes_received less the receive queue unchanged, the
	// same connection by its cookie), in at least half the looks.
	// Consecutive looks are the window over Looks+1 apart (180 ms by
	// default); a loop reads a socket its wait reports readable within a
	// round, and one that ran a tenth of the window (the floor of
	// spinning) ran a tenth of that span too, rounds enough to read it, so
	// a correct loop reads it between two looks; one that stops reading
	// (backpressure) takes EPOLLIN out of its set first. Bytes left so for
	// half the window are bytes the loop is told of at every wait and
	// never takes.
	neverReadLooks = 2 // 1/neverReadLooks of the looks
	// fullTableMargin: the table counts as full at the soft RLIMIT_NOFILE
	// less 2, R4's figure (conformance/cases r4FullTableLimit): a process
	// at EMFILE may hold a descriptor or two less for a moment (a file it
	// opens and closes, the spare descriptor some servers keep to accept
	// and close at EMFILE); a table 3 or more short is not taken for
	// full.
	fullTableMargin = 2
	// unreadLooks: one socket holding unread bytes in at least half the
	// looks was not read for half the window. A loop given a CPU reads its
	// sockets each round, so bytes sit unread for a round at most; on a
	// machine that starves the loop they sit longer (measured: a loaded
	// examples/echo whose threads waited for a CPU as long as they ran, one
	// socket's bytes unread in 5 of 10 looks), which is why blocked also
	// needs long stays in the call (longStay).
	unreadLooks = 2 // 1/unreadLooks of the looks
	// longStay: a thread held in a call stays there long: its time in it
	// (its share of the samples times the window) over its voluntary
	// switches (each stay is one; the switches into its wait count too, so
	// this is a lower bound) is at least a sample's 10 ms. A runtime that
	// parks idle threads in futex and hands them work wakes them thousands
	// of times a second (measured: a loaded examples/echo, 0.3 ms a block
	// on a machine that starved it, one socket's bytes unread in half the
	// looks meanwhile): they cycle, they are not held.
	longStay = 10 * time.Millisecond
	// rareWaitShare: a loop whose waits block is found in them whenever
	// it has nothing to do; one seen in a wait in under a tenth of the
	// samples while it ran a tenth of the window or more had its waits
	// return at once, or never waited (a runtime that parks its threads
	// elsewhere between rounds blocks them in futex, not in the wait).
	rareWaitShare = 10 // 1/rareWaitShare of the samples
	// wakesPerSegment: a loop woken only by work wakes at most once per
	// segment its sockets receive (readable when data comes; writable when
	// an ACK frees send queue it was waiting on: the ACK is a segment too),
	// and at most once more per segment for a task another thread hands
	// back about it (a worker's result): two wakeups per segment received.
	// More than that is wakeups no arriving work explains.
	wakesPerSegment = 2
	// minWakeups: the wakeups (voluntary switches) that must be seen before
	// their count per segment says anything, the same floor as
	// minReadCalls and for the same reason: a thousand in the window is
	// past what an idle loop's timers make (a few a second) and far under
	// what a wakeup storm makes (thousands a second).
	minWakeups = 1000
	// tokenBytes: an eventfd is written 8 bytes at a time (its counter,
	// eventfd(2)) and a wakeup pipe usually one byte; a thread whose write
	// calls averaged 8 bytes or less wrote tokens, not data (an echo's
	// socket writes carry what was read).
	tokenBytes = 8
	// tokenWritesPerWake: a wakeup caused by a token follows a token
	// write (an eventfd counts writes the loop has not read yet into one
	// wakeup, so writes ≥ wakeups it caused); token writes at least half
	// the loop's wakeups explain at least half of them.
	tokenWritesPerWake = 2 // one token write per tokenWritesPerWake wakeups
)

// Method is the rules Classify applies, as one paragraph the report
// prints: every threshold with its reason in short.
func Method() string {
	return fmt.Sprintf("a loop thread is one seen in an event wait (epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect6, io_uring_enter, and poll resumed by restart_syscall, known by its wait channel) in at least one sample, or that ran ≥ %d%% of the window. "+
		"spinning: ran ≥ %d%% of the window AND at least two of: (waits that did not block) seen in an event wait in < 1/%d of the samples, or fewer voluntary switches than one per %v of CPU it ran (involuntary switches are no signal: on a CPU other work wants, a loop that blocks between rounds is preempted within them too); "+
		"(reads that returned nothing) ≥ %d read calls in the window with fewer bytes read than calls; "+
		"(write interest with nothing to send) a socket of its epoll set (the one it was seen waiting on; for a thread seen in no epoll wait, a set no thread was seen waiting on) registered level-triggered for EPOLLOUT with an empty send queue in ≥ 1/%d of ≥ %d looks; "+
		"(accept failing for want of descriptors) a listening socket of its epoll set registered level-triggered for EPOLLIN with connections in its accept queue while its process held ≥ its soft RLIMIT_NOFILE less %d descriptors, in ≥ 1/%d of ≥ %d looks; "+
		"(readable and never read) one connection of its epoll set, the descriptor of its process that holds it, registered level-triggered for EPOLLIN with unread bytes at a look and at the look before and none read between them (tcpi_bytes_received less the receive queue unchanged), in ≥ 1/%d of ≥ %d looks. "+
		"A wait with a zero timeout never sleeps, so /proc shows it only as running: it is not a signal this tool can see. "+
		"waking itself: both of: (woken for nothing) ≥ %d wakeups from its event wait in the window (its voluntary switches times the share of its blocked samples that were in its wait) AND more than %d per segment the sockets of its epoll set received (tcpi_segs_in, data and ACKs; a set that holds no socket, a worker's woken by tokens or a completion loop's whose sockets are in its ring, is held to every TCP socket its process holds); "+
		"(tokens from its own threads) an eventfd or pipe registered in its epoll set for EPOLLIN AND its process's threads whose write calls averaged ≤ %d bytes (eventfd counters, pipe bytes) made ≥ one write per %d of those wakeups. "+
		"blocked: in one system call other than its wait in ≥ 1/%d of the samples, for ≥ %v a block (that share of the window over its voluntary switches), AND (one socket of its epoll set held unread bytes in ≥ 1/%d of ≥ %d looks while no other thread that ran ≥ %d%% of the window waited on that set or on none, or it was in state D in ≥ 1/%d of the samples). "+
		"starved: its run-queue wait ≥ its run time AND ≥ %d%% of the window. "+
		"serving: ran ≥ %d%% of the window. waiting: the rest.",
		loopCPUShare, loopCPUShare, rareWaitShare, perRoundCPU, minReadCalls, idleWriteLooks, minLooks, fullTableMargin, fullTableLooks, minLooks, neverReadLooks, minLooks, minWakeups, wakesPerSegment, tokenBytes, tokenWritesPerWake, blockedShare, longStay, unreadLooks, minLooks, loopCPUShare, blockedShare, loopCPUShare, loopCPUShare)
}

// Thread is one thread's figures over the window, and what Classify
// concluded from them. A count that could not be read is -1, and
// Unreadable says why.
type Thread struct {
	Tid  int    `json:"tid"`
	Comm string `json:"comm"`
	// Class and Evidence are Classify's: the class, and one line per
	// signal with its figures (the signals that held first).
	Class    Class    `json:"class"`
	Evidence []string `json:"evidence"`

	// Samples is how many times the thread was looked at; InWait, Running
	// and InCall split them: in an event wait, on or waiting for a CPU,
	// in another system call (by call name). StateD counts the samples in
	// uninterruptible sleep.
	Samples int            `json:"samples"`
	InWait  int            `json:"in_wait"`
	Running int            `json:"running"`
	InCall  map[string]int `json:"in_call,omitempty"`
	StateD  int            `json:"state_d"`
	// WaitCalls are the event waits it was seen in, by name and epoll
	// descriptor ("epoll_pwait on 7"), with their sample counts, and
	// WaitTimeouts the timeouts those with a timeout argument were seen
	// with ("-1 ms", "30..999 ms").
	WaitCalls    map[string]int    `json:"wait_calls,omitempty"`
	WaitTimeouts map[string]string `json:"wait_timeouts,omitempty"`

	// Run and RunqWait are schedstat's over the window: time on a CPU,
	// and time runnable waiting for one (RunqWait -1: unknown).
	Run      jsontime.Seconds `json:"run_s"`
	RunqWait jsontime.Seconds `json:"runq_wait_s"`
	// Voluntary and Involuntary are status's switch counts over the
	// window.
	Voluntary   int64 `json:"voluntary_switches"`
	Involuntary int64 `json:"involuntary_switches"`
	// ReadCalls and ReadBytes are io's syscr and rchar over the window.
	ReadCalls int64 `json:"read_calls"`
	ReadBytes int64 `json:"read_bytes"`

	// EpollFd is the epoll descriptor it was seen waiting on most (-1:
	// none); Looks is how many times that set and its sockets were read,
	// IdleWriteLooks how many of them found a socket of it registered
	// level-triggered for EPOLLOUT with an empty send queue (MostIdleWrite
	// the most such sockets in one look), UnreadLooks the most looks in
	// which one socket of it (the same one) held unread bytes or queued
	// connections.
	EpollFd int `json:"epoll_fd"`
	// EpollUnseen says the thread was never seen in an epoll wait and
	// EpollFd is a set no thread was seen waiting on (a set whose waits
	// never block is never seen waited on), the one of them most often
	// holding idle write interest, a listener refused for want of
	// descriptors or a connection readable and never read.
	EpollUnseen    bool `json:"epoll_fd_unseen,omitempty"`
	Looks          int  `json:"looks"`
	IdleWriteLooks int  `json:"idle_write_looks"`
	MostIdleWrite  int  `json:"most_idle_write_sockets"`
	UnreadLooks    int  `json:"unread_looks"`
	// FullTableLooks is how many of Looks found a listening socket of
	// that set registered level-triggered for EPOLLIN with connections in
	// its accept queue while the process held at least its soft
	// RLIMIT_NOFILE less fullTableMargin descriptors; FullTable is the
	// figures of the one of those looks with the most connections queued
	// (nil when none did).
	FullTableLooks int        `json:"full_table_looks"`
	FullTable      *FullTable `json:"full_table,omitempty"`
	// NeverReadLooks is how many of Looks found one connection of that
	// set (the same, by its cookie, and held by the descriptor the set's
	// item names) registered level-triggered for EPOLLIN with unread
	// bytes, as the look before had, and not one byte of it read since;
	// NeverRead is that connection's figures at the last such look (nil
	// when no look did).
	NeverReadLooks int        `json:"never_read_looks"`
	NeverRead      *NeverRead `json:"never_read,omitempty"`
	// Segments is the segments the sockets of that set received over the
	// window (tcpi_segs_in; -1: not read), TokenFds the eventfds and
	// pipes registered in it for EPOLLIN, and TokenWrites the write calls
	// over the window of the process's TokenWriters threads whose writes
	// averaged 8 bytes or less (-1: not read).
	Segments int64 `json:"segments_in"`
	// SegmentsOfProcess says its set holds no socket, or it has no set,
	// and Segments counts those of every TCP socket its process holds
	// instead (a worker woken by tokens for work another thread polled; a
	// completion loop, whose sockets are in its ring and whose set, if it
	// has one, holds only its own eventfd and timerfd).
	SegmentsOfProcess bool     `json:"segments_of_process,omitempty"`
	TokenFds          []string `json:"token_fds,omitempty"`
	TokenWrites       int64    `json:"token_writes"`
	TokenWriters      int      `json:"token_writers"`
	// BusySharers counts the process's other loop threads that ran a
	// tenth of the window or more and waited on this thread's epoll set,
	// or on none (a runtime's worker running the set's work between waits
	// it is never seen in): threads that may have been serving its set.
	BusySharers int `json:"busy_sharers"`

	// Unreadable lists what could not be read of this thread, and why.
	Unreadable []string `json:"unreadable,omitempty"`
}

// FullTable is one look at a listener whose accepts fail for want of
// descriptors: its local address, the connections in its accept queue
// (at least 1), and the descriptors its process held against its soft
// RLIMIT_NOFILE (Open ≥ Limit less fullTableMargin).
type FullTable struct {
	Listener string `json:"listener"`
	Queued   int    `json:"queued"`
	Open     int    `json:"descriptors_open"`
	Limit    int64  `json:"descriptor_limit"`
}

// NeverRead is one look at a connection readable and never read: its
// ends (local→remote), the descriptor of the process that holds it, the
// bytes in its receive queue (at least 1) and the bytes the process had
// read from it since it was made (the same as at the look before).
type NeverRead struct {
	Socket string `json:"socket"`
	Fd     int    `json:"fd"`
	Unread int64  `json:"unread_bytes"`
	Read   int64  `json:"read_bytes"`
}

// Classify sets t's Class and Evidence from its figures over a window of
// length window, by the rules of Method.
func Classify(t *Thread, window time.Duration) {
	run, wait := time.Duration(t.Run), time.Duration(t.RunqWait)
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(window) }
	busy := run*100 >= window*loopCPUShare
	var ev, held []string

	cpuLine := fmt.Sprintf("CPU: ran %v (%.0f%% of the %v window)", run.Round(time.Millisecond), pct(run), window.Round(time.Millisecond))
	if run < 0 {
		cpuLine = "CPU: unknown (its schedstat was not read)"
	}
	if run >= 0 && wait >= 0 {
		cpuLine += fmt.Sprintf(", waited %v for a CPU", wait.Round(time.Millisecond))
	}
	// Waits that did not block.
	switchesKnown := t.Voluntary >= 0 && t.Involuntary >= 0
	noBlock := false
	switchLine := "switches: unknown"
	if switchesKnown {
		rounds := int64(run / perRoundCPU)
		// Preemptions say how much other work wanted the CPU, not whether
		// the loop's waits blocked: the truth table's loaded Twisted and
		// BEAM loops, seen in their waits in a third of the samples and
		// more, were preempted more often than they blocked on a busy
		// machine (docs/DIAGNOSE.md).
		noBlock = t.Voluntary < rounds
		switchLine = fmt.Sprintf("switches: %d voluntary (blocked), %d involuntary (preempted); its CPU implies ≥ %d rounds at one per %v", t.Voluntary, t.Involuntary, rounds, perRoundCPU)
	}
	rareWait := t.Samples > 0 && t.InWait*rareWaitShare < t.Samples
	noBlock = busy && (noBlock || rareWait)
	if rareWait {
		switchLine += fmt.Sprintf("; seen in an event wait in %d of %d samples", t.InWait, t.Samples)
	}
	// Reads that returned nothing.
	emptyReads := t.ReadCalls >= minReadCalls && t.ReadBytes >= 0 && t.ReadBytes < t.ReadCalls
	readLine := "reads: unknown"
	if t.ReadCalls >= 0 && t.ReadBytes >= 0 {
		readLine = fmt.Sprintf("reads: %d read calls returned %d bytes", t.ReadCalls, t.ReadBytes)
	}
	// Write interest with nothing to send.
	idleWrite := t.Looks >= minLooks && t.IdleWriteLooks*idleWriteLooks >= t.Looks
	epollLine := "epoll set: none seen"
	if t.EpollFd >= 0 {
		set := fmt.Sprintf("epoll set %d", t.EpollFd)
		if t.EpollUnseen {
			set = fmt.Sprintf("epoll set %d (no thread was seen waiting on it; this one was seen in no epoll wait)", t.EpollFd)
		}
		epollLine = fmt.Sprintf("%s: in %d of %d looks a socket of it was registered level-triggered for EPOLLOUT with an empty send queue (at most %d at once); one socket of it held unread bytes in %d",
			set, t.IdleWriteLooks, t.Looks, t.MostIdleWrite, t.UnreadLooks)
		if t.BusySharers > 0 {
			epollLine += fmt.Sprintf(", while %s that ran ≥ %d%% of the window may have served it", figure.Counted(t.BusySharers, "other thread", "other threads"), loopCPUShare)
		}
	}
	// Accept failing for want of descriptors.
	fullTable := t.Looks >= minLooks && t.FullTableLooks*fullTableLooks >= t.Looks && t.FullTable != nil
	acceptLine := ""
	if f := t.FullTable; f != nil {
		acceptLine = fmt.Sprintf("listener %s with %d queued, %d of %d descriptors open (its soft RLIMIT_NOFILE), registered level-triggered for EPOLLIN in its epoll set %d: so in %d of %d looks",
			f.Listener, f.Queued, f.Open, f.Limit, t.EpollFd, t.FullTableLooks, t.Looks)
	}
	// A connection readable and never read.
	unreadSpin := t.Looks >= minLooks && t.NeverReadLooks*neverReadLooks >= t.Looks && t.NeverRead != nil
	neverReadLine := ""
	if n := t.NeverRead; n != nil {
		neverReadLine = fmt.Sprintf("connection %s (fd %d) registered level-triggered for EPOLLIN in its epoll set %d held %d unread bytes, %d read since it was made, none read since the look before: so in %d of %d looks",
			n.Socket, n.Fd, t.EpollFd, n.Unread, n.Read, t.NeverReadLooks, t.Looks)
	}
	signals := 0
	for _, s := range []struct {
		holds bool
		name  string
		line  string
	}{
		{noBlock, "waits that did not block", switchLine},
		{emptyReads, "reads that returned nothing", readLine},
		{idleWrite, "write interest with nothing to send", epollLine},
		{fullTable, "accept failing for want of descriptors", acceptLine},
		{unreadSpin, "readable and never read", neverReadLine},
	} {
		if s.holds {
			signals++
			held = append(held, "signal ("+s.name+"): "+s.line)
		}
	}
	samplesLine := t.samplesLine()

	// Waking itself: wakeups no work explains, and tokens from its own
	// threads to explain them.
	// Its wakeups from its event wait: its voluntary switches times the
	// share of the samples that found it blocked that found it in its
	// wait (a thread that also parks in futex, as a runtime's worker does,
	// blocks there too, and those wakeups are not its loop's).
	wakeups := int64(-1)
	if blockedSamples := t.InWait + sum(t.InCall); t.Voluntary >= 0 && blockedSamples > 0 {
		wakeups = t.Voluntary * int64(t.InWait) / int64(blockedSamples)
	}
	wokeForNothing := wakeups >= minWakeups && t.Segments >= 0 && wakeups > wakesPerSegment*t.Segments
	wakeLine := "wakeups: unknown"
	if wakeups >= 0 && t.Segments >= 0 {
		per := "no segment received"
		if t.Segments > 0 {
			per = fmt.Sprintf("%.1f per segment", float64(wakeups)/float64(t.Segments))
		}
		whose := "its epoll set's sockets"
		if t.SegmentsOfProcess {
			whose = "every TCP socket its process holds (its own set holds none, or it has none)"
		}
		wakeLine = fmt.Sprintf("wakeups: %d from its event wait (%d voluntary switches, in its wait in %d of the %d samples that found it blocked), %d segments received by %s (%s)",
			wakeups, t.Voluntary, t.InWait, t.InWait+sum(t.InCall), t.Segments, whose, per)
	}
	tokens := len(t.TokenFds) > 0 && t.TokenWrites >= 0 && wakeups > 0 && t.TokenWrites*tokenWritesPerWake >= wakeups
	tokenLine := "tokens: unknown"
	if t.TokenWrites >= 0 {
		fds := "none"
		if len(t.TokenFds) > 0 {
			fds = strings.Join(t.TokenFds, ", ")
		}
		tokenLine = fmt.Sprintf("tokens: eventfds and pipes in its set for EPOLLIN: %s; %s of ≤ %d bytes on average by %s of its process", fds,
			figure.Counted(int(t.TokenWrites), "write call", "write calls"), tokenBytes, figure.Counted(t.TokenWriters, "thread", "threads"))
	}

	// Blocked: the call that held it most.
	topCall, topN := "", 0
	for _, c := range slices.Sorted(maps.Keys(t.InCall)) {
		if n := t.InCall[c]; n > topN {
			topCall, topN = c, n
		}
	}
	inCall := t.Samples > 0 && topN*blockedShare >= t.Samples
	// Bytes left unread wait for this thread only if no busy thread may
	// have been serving the set: a runtime that parks its spare threads in
	// futex while one of its threads serves (Go's scheduler with one P)
	// leaves bytes unread for the busy one, not the parked one.
	workWaited := t.Looks >= minLooks && t.UnreadLooks*unreadLooks >= t.Looks && t.BusySharers == 0
	var heldFor time.Duration
	if t.Samples > 0 {
		heldFor = window * time.Duration(topN) / time.Duration(t.Samples)
	}
	longStays := t.Voluntary == 0 || t.Voluntary > 0 && heldFor/time.Duration(t.Voluntary) >= longStay
	staysLine := fmt.Sprintf("its stays were long: about %v in %s over %d blocks (voluntary switches), ≥ %v a block", heldFor.Round(time.Millisecond), topCall, max(t.Voluntary, 0), longStay)
	stateD := t.Samples > 0 && t.StateD*blockedShare >= t.Samples

	switch {
	case busy && signals >= 2:
		t.Class = Spinning
		ev = append(ev, cpuLine)
		ev = append(ev, held...)
	case wokeForNothing && tokens:
		t.Class = WakingItself
		ev = append(ev, "signal (woken for nothing): "+wakeLine, "signal (tokens from its own threads): "+tokenLine, cpuLine)
	case inCall && longStays && (workWaited || stateD):
		t.Class = Blocked
		ev = append(ev, fmt.Sprintf("signal (held in %s): in %s in %d of %d samples; %s", topCall, topCall, topN, t.Samples, staysLine))
		if workWaited {
			ev = append(ev, "signal (work waited): "+epollLine)
		}
		if stateD {
			ev = append(ev, fmt.Sprintf("signal (uninterruptible): state D in %d of %d samples", t.StateD, t.Samples))
		}
		ev = append(ev, cpuLine)
	case wait >= 0 && wait >= run && wait*100 >= window*loopCPUShare:
		t.Class = Starved
		ev = append(ev, fmt.Sprintf("signal (run-queue wait): waited %v for a CPU (%.0f%% of the window), ≥ the %v it ran (%.0f%%)", wait.Round(time.Millisecond), pct(wait), run.Round(time.Millisecond), pct(run)))
	case busy:
		t.Class = Serving
		ev = append(ev, cpuLine)
		if noBlock {
			ev = append(ev, "its waits rarely blocked ("+switchLine+"): a saturated loop, or a spin without a second signal seen here")
		}
	default:
		t.Class = Waiting
		ev = append(ev, cpuLine)
	}
	for _, l := range []string{cpuLine, samplesLine, switchLine, readLine, epollLine, acceptLine, neverReadLine, wakeLine, tokenLine} {
		if l != "" && !mentioned(ev, l) {
			ev = append(ev, l)
		}
	}
	for _, u := range t.Unreadable {
		ev = append(ev, "not read: "+u)
	}
	t.Evidence = ev
}

// sum adds a map's counts.
func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// samplesLine says where the samples found the thread.
func (t *Thread) samplesLine() string {
	var parts []string
	for _, w := range slices.Sorted(maps.Keys(t.WaitCalls)) {
		timeout := ""
		if to, ok := t.WaitTimeouts[w]; ok {
			timeout = " (timeout " + to + ")"
		}
		parts = append(parts, fmt.Sprintf("%s%s in %d", w, timeout, t.WaitCalls[w]))
	}
	if t.Running > 0 {
		parts = append(parts, fmt.Sprintf("running or runnable in %d", t.Running))
	}
	for _, c := range slices.Sorted(maps.Keys(t.InCall)) {
		parts = append(parts, fmt.Sprintf("in %s in %d", c, t.InCall[c]))
	}
	if t.StateD > 0 {
		parts = append(parts, fmt.Sprintf("state D in %d", t.StateD))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("samples: %d, none read", t.Samples)
	}
	return fmt.Sprintf("samples: %d: %s", t.Samples, strings.Join(parts, ", "))
}

// mentioned reports whether a line of ev already carries line l: as
// itself, after a signal's name, or in brackets.
func mentioned(ev []string, l string) bool {
	for _, e := range ev {
		if strings.HasSuffix(e, l) || strings.Contains(e, "("+l+")") {
			return true
		}
	}
	return false
}
