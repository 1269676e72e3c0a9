package conformance

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/reactors"
)

// M4, the thundering herd, seen from what any server leaves visible: the
// voluntary context switches of its threads (each time a thread slept and
// was woken again). A listener shared without EPOLLEXCLUSIVE wakes every
// loop waiting on it for each connection, though the kernel re-polls the
// listener before epoll_wait returns and sends all but one back to sleep
// inside it: useless accept calls undercount the herd, the wakeups do not.

// The probe's shape: herdConns connections herdGap apart, on a server
// idle before (an idle stretch as long is measured first) and kept open
// until measured, so that closing them wakes nothing being counted.
const (
	herdConns = 100
	herdGap   = 2 * time.Millisecond
)

// The black-box verdict's thresholds, on each thread's wakeups beyond
// idle per connection. A thread that woke for at least herdThreadShare of
// the connections is woken by (nearly) every connection; herdFailThreads
// such threads are several waiters on one listener. A thread that woke,
// idle, for more than herdNoisyShare of the connections' count cannot be
// read either way.
const (
	herdThreadShare = 0.75
	herdFailThreads = 3
	herdNoisyShare  = 0.5
)

// herdTotalShare is the black-box verdict on a listener the kernel wakes
// several waiters on for every connection (listenerWaits.sharers), taken
// over all threads: accepting needs one
// waiter woken a connection; wakeups beyond the round trips' of at least
// 1.5 a connection, all threads together, mean a second set's waiter woke
// for half the connections or more: a herd, even when the runtime moves
// that waiter between threads so that no single thread reaches
// herdThreadShare (netpoll: its poller goroutine and the Go runtime's
// netpoller each hold the listener; measured 1.8–2.9 a connection).
const herdTotalShare = 1.5

// m4Loops is the data loops a multi-loop reference design runs in M4:
// enough that a herd (4 wakeups a connection) stands far above what a
// design needs (1, or 2 with a handoff).
const m4Loops = 4

// m4Case is M4: new connections on an idle server wake no more of its
// threads than its design needs to accept and take them on: no thundering
// herd.
func m4Case() Case {
	return Case{
		ID:    "M4",
		Title: "no thundering herd",
		Claim: "100 connections opened 2 ms apart on an idle server wake, for each, no more of its threads than its design needs to accept the connection and take it on. " +
			"A reference reactor: its loop threads wake at most once a connection (twice when it hands connections over: the acceptor and the sub-loop), plus one. " +
			"A black box is judged on the kernel's herd, the waiters it wakes on one listener for every connection: each epoll instance holding the listener without EPOLLEXCLUSIVE (a descriptor dup'd or inherited across fork is the same instance), each thread blocked in poll or select with it in its read list, and one of the exclusive waiters (epoll instances with EPOLLEXCLUSIVE, threads blocked in accept) if any. " +
			"It fails with 2 or more such waiters when either 2 or more of its threads each wake for (nearly) every connection beyond their idle wakeups, or all its threads together wake at least 1.5 times a connection beyond what as many round trips on an open connection wake them for (accepting needs one waiter; a runtime may move the second between threads). " +
			"With one such waiter it passes: the threads woken besides are a hand-over's and its runtime's (a Go program's threads hand their P on around each blocking system call), and wakeups a server makes itself (an acceptor waking every worker) are in the evidence but not judged, because a runtime's scheduler wakes threads for each connection as often. " +
			"Where no waiter on its listener is seen (a poll or select whose list cannot be read, a wait this case does not look for), 3 threads each woken for (nearly) every connection beyond what a round trip wakes them for fail, 2 are inconclusive (a herd of two and an acceptor that hands each connection to one loop look alike from outside), fewer pass. " +
			"Inconclusive too when idle wakeups drown the signal, or when its threads were not seen waking for the connections at all",
		BlackBoxBugs: []string{"herd", "herd-poll"},
		Bound: "wakeups are voluntary context switches (a reference's loop threads: per-loop wakeups in-process, /proc/PID/task/TID/status for a process; a black box: every thread of its process group) in three stretches of 200 ms: idle, 100 round trips on one open connection, 100 new connections with one round trip each; the epoll instances holding the listener from /proc/PID/fdinfo, told apart with kcmp, the threads waiting on it in poll, ppoll, select, pselect6, accept or accept4 from /proc/PID/task/TID/syscall and the pollers' descriptor lists (process_vm_readv; the most of 5 looks 2 ms apart). " +
			"Reference: the loops' wakeups for the connections less those for the round trips ≤ need + 1 a connection, need 1 (2 with a handoff). " +
			"Black box: a thread wakes for every connection when its wakeups for the connections less its idle ones (with several waiters seen) or less those for the round trips (with none seen) are ≥ 75% of the connections; all threads together, less the round trips', ≥ 1.5 a connection; a thread that woke idle more than half as many times as there are connections could be either, and makes a verdict that depends on it inconclusive",
		Setup:   Setup{Tweak: m4Tweak},
		Timeout: 30 * time.Second,
		Run:     runM4,
	}
}

// m4Tweak gives a multi-loop design m4Loops data loops, and every design
// deadline timers (no periodic tick): every wakeup is then an event's.
func m4Tweak(d reactors.Design, cfg *reactors.Config) {
	withLoops(d, cfg, m4Loops)
	cfg.Timer = reactors.TimerDeadline
}

// threadWakeups is one thread's voluntary context switches in each of
// M4's three stretches: idle, round trips on one open connection, and
// new connections (each with one round trip).
type threadWakeups struct {
	id                    string // "tid 1234"
	tid                   int
	idle, requests, conns uint64
	born                  bool // the thread was not there when the idle stretch began
}

// excess is how many more times the thread woke for the new connections
// than for as many round trips on an open connection (0 if fewer): what
// accepting costs it beyond serving. Wakeups a runtime's scheduler adds
// to every event (a Go program's threads hand their P on around each
// blocking system call) come with both and cancel; a loop woken for
// every connection it does not take (a herd) wakes for connections only.
func (w threadWakeups) excess() float64 { return max(0, float64(w.conns)-float64(w.requests)) }

func runM4(c *C) {
	sample, err := wakeupSampler(c.Instance())
	if err != nil {
		c.Skipf("the server's threads' wakeups cannot be read: %v", err)
	}
	threads := measureHerd(c, sample)
	var lines []string
	for _, w := range threads {
		born := ""
		if w.born {
			born = ", new"
		}
		lines = append(lines, fmt.Sprintf("%s: %d, %d, %d%s", w.id, w.idle, w.requests, w.conns, born))
	}
	c.Evidencef("sent: %d round trips on one connection, then %d connections with one round trip each, %v apart, kept open; wakeups per thread (idle, round trips, connections) over %v each: %s",
		herdConns, herdConns, herdGap, herdConns*herdGap, strings.Join(lines, "; "))
	c.Logf("wakeups per thread (idle, round trips, connections): %s", strings.Join(lines, "; "))
	if c.Reference() != nil {
		judgeReferenceHerd(c, threads)
		return
	}
	judgeBlackBoxHerd(c, threads)
}

// measureHerd samples every thread's wakeups over three stretches of
// herdConns × herdGap: idle (one connection open), herdConns round trips
// on that connection, and herdConns new connections with a round trip
// each, kept open. Threads gone by the end are left out.
func measureHerd(c *C, sample func() (map[int]uint64, error)) []threadWakeups {
	read := func() map[int]uint64 {
		s, err := sample()
		if err != nil {
			c.Fatalf("reading the server's wakeups: %v", err)
		}
		return s
	}
	addr := c.Instance().Addr()
	probe := c.dialQuiet("round-trip conn", addr)
	herdRoundTrip(c, probe.Conn(), 0, 0)
	time.Sleep(herdGap)
	s0 := read()
	time.Sleep(herdConns * herdGap)
	s1 := read()
	for i := range herdConns {
		herdRoundTrip(c, probe.Conn(), 0, uint64(i+1))
		time.Sleep(herdGap)
	}
	s2 := read()
	for i := range herdConns {
		conn := c.dialQuiet(fmt.Sprintf("conn %d", i+1), addr)
		herdRoundTrip(c, conn.Conn(), uint64(i+1), 0)
		time.Sleep(herdGap)
	}
	s3 := read()
	var out []threadWakeups
	for tid, n := range s3 {
		w := threadWakeups{tid: tid, id: fmt.Sprintf("tid %d", tid)}
		a, in0 := s0[tid]
		b, in1 := s1[tid]
		d, in2 := s2[tid]
		w.born = !in0
		switch {
		case in0 && in1 && in2:
			w.idle, w.requests, w.conns = b-a, d-b, n-d
		case in2:
			w.conns = n - d
		default:
			w.conns = n
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b threadWakeups) int { return a.tid - b.tid })
	return out
}

// herdRoundTrip sends one 64 B DATA frame on conn and reads its echo, or
// fails the case.
func herdRoundTrip(c *C, conn net.Conn, token, seq uint64) {
	conn.SetDeadline(time.Now().Add(echoBound))
	if _, err := conn.Write(dataFrame(token, seq, 64)); err != nil {
		c.Fatalf("conn %d: write: %v", token, err)
	}
	g, err := readFrame(conn)
	if err != nil {
		c.Fatalf("conn %d: echo of seq %d: %v", token, seq, err)
	}
	if why := checkEcho(g, token, seq, 64); why != "" {
		c.Fatalf("conn %d: echo of seq %d: %s", token, seq, why)
	}
}

// judgeReferenceHerd holds a reference reactor's loop threads to what
// its design needs: one loop woken a connection, two where the reactor
// hands connections over, plus one.
func judgeReferenceHerd(c *C, threads []threadWakeups) {
	st, ok := multiLoopStats(c)
	if !ok {
		c.Fatalf("the reference reactor reported no statistics")
	}
	loops := map[int]bool{}
	for _, l := range st.PerLoop {
		loops[l.Tid] = true
	}
	var idle, requests, conns float64
	for _, w := range threads {
		if loops[w.tid] {
			idle, requests, conns = idle+float64(w.idle), requests+float64(w.requests), conns+float64(w.conns)
		}
	}
	need := 1.0
	if st.Counters.Handoffs > 0 {
		need = 2
	}
	per := (conns - requests) / herdConns
	c.Evidencef("loop threads: %.0f wakeups idle, %.0f for the round trips, %.0f for the connections: %.2f a connection beyond a round trip; the design needs %.0f (bound %.0f)", idle, requests, conns, per, need, need+1)
	c.Logf("loop wakeups a connection beyond a round trip: %.2f (idle %.0f; bound %.0f)", per, idle, need+1)
	switch {
	case per > need+1:
		c.Fatalf("a thundering herd: the loops woke %.2f times more for each new connection than for a round trip on an open one; the design needs %.0f (bound %.0f)", per, need, need+1)
	case idle > herdNoisyShare*herdConns:
		c.Inconclusivef("the loops woke %.0f times while idle, more than half as many as there were connections: the signal cannot be read", idle)
	case conns-idle < herdThreadShare*herdConns:
		c.Inconclusivef("%s", unseenWakeups("the loops", idle, conns))
	}
}

// unseenWakeups says why the wakeups of who (the loops, the server's
// threads) for the herdConns connections could not be seen: idle and
// conns are their wakeups in the idle stretch and in the connections'
// stretch, of equal length. Fewer for the connections than while idle is
// no count of anything (a spin or a timer drowns the signal, and the
// machine decides how often it switches), so it is said as it is, never
// as a negative number of wakeups.
func unseenWakeups(who string, idle, conns float64) string {
	if conns < idle {
		return fmt.Sprintf("%s woke fewer times while %d connections arrived (%.0f) than in as long idle (%.0f): what wakes them idle (a spin, a timer) drowns what the connections do, so no wakeup can be put down to a connection", who, herdConns, conns, idle)
	}
	return fmt.Sprintf("%s woke only %.0f times beyond idle for %d connections (%.0f while they arrived, %.0f idle): the wakeups were not seen", who, conns-idle, herdConns, conns, idle)
}

// judgeBlackBoxHerd is the black-box verdict: the threads that woke for
// (nearly) every connection beyond what a round trip wakes them for,
// or beyond idle, those too noisy to tell, and who waits on the listener
// (listenerWaiters).
func judgeBlackBoxHerd(c *C, threads []threadWakeups) {
	// every: woke for (nearly) every connection beyond what as many round
	// trips wake it for; woken: woke for (nearly) every connection beyond
	// idle (every is among them, and so is a thread that serves the
	// connections it accepts); noisy: too busy idle to tell.
	var every, woken, noisy []string
	var idle, conns, excess float64
	for _, w := range threads {
		idle, conns, excess = idle+float64(w.idle), conns+float64(w.conns), excess+w.excess()
		isEvery := w.excess() >= herdThreadShare*herdConns
		isNoisy := !isEvery && float64(w.idle) > herdNoisyShare*herdConns && float64(w.conns) >= herdThreadShare*herdConns
		switch {
		case isEvery:
			every, woken = append(every, w.id), append(woken, w.id)
		case isNoisy:
			noisy = append(noisy, w.id)
		case float64(w.conns)-float64(w.idle) >= herdThreadShare*herdConns:
			woken = append(woken, w.id)
		}
	}
	waits, pollErr, serr := listenerWaiters(c.Instance())
	sets := waits.String()
	switch {
	case serr != nil:
		sets = fmt.Sprintf("the epoll sets holding the listener could not be read (%v)", serr)
	case pollErr != nil:
		sets += fmt.Sprintf("; a thread's call could not be read (%v): the threads in poll, select or accept are a lower bound", pollErr)
	}
	c.Evidencef("threads that woke for ≥ %.0f%% of the connections beyond the round trips: %d (%s); beyond idle: %d (%s); too noisy to tell: %d (%s); all threads together %.2f wakeups a connection beyond a round trip's; %s",
		100*herdThreadShare, len(every), strings.Join(every, ", "), len(woken), strings.Join(woken, ", "), len(noisy), strings.Join(noisy, ", "), excess/herdConns, sets)
	c.Logf("threads waking for every connection: %d beyond the round trips, %d beyond idle; noisy: %d; wakeups a connection beyond a round trip, all threads: %.2f; %s", len(every), len(woken), len(noisy), excess/herdConns, sets)
	// known: the server is seen waiting on its listener (epoll, poll or
	// select); shared: the kernel wakes several of its waiters for every
	// connection.
	known := serr == nil && waits.any()
	shared := known && waits.sharers() >= 2
	switch {
	case len(every) >= 2 && shared:
		c.Fatalf("a thundering herd: %d threads each woke for (nearly) every one of %d connections, beyond what a round trip wakes them for (%s), and %s", len(every), herdConns, strings.Join(every, ", "), sets)
	case shared && len(woken) >= 2 && len(noisy) == 0:
		// The kernel wakes each waiter for every connection, and as many
		// threads each woke for (nearly) every one: the waiters did wake,
		// whatever else (a round trip on a connection a waiter accepted
		// itself) woke them too.
		c.Fatalf("a thundering herd: %s, and %d threads each woke for (nearly) every one of %d connections (%s): several waiters woke for each", sets, len(woken), herdConns, strings.Join(woken, ", "))
	case shared && excess >= herdTotalShare*herdConns && len(noisy) == 0:
		c.Fatalf("a thundering herd: %s, and its threads woke %.2f times a connection beyond what a round trip wakes them for, all together (accepting needs one waiter): several waiters woke for each of %d connections", sets, excess/herdConns, herdConns)
	case len(woken)+len(noisy) >= 2 && shared:
		c.Inconclusivef("%d threads woke for every connection and %d more woke so often while idle that they may have too, and %s: a herd cannot be told from the noise", len(woken), len(noisy), sets)
	case conns-idle < herdThreadShare*herdConns:
		c.Inconclusivef("%s", unseenWakeups("the server's threads", idle, conns))
	case len(every) <= 1 || known:
		// At most one waiter on the listener wakes for each connection:
		// threads woken besides are a hand-over's and the runtime's, not a
		// herd.
	case len(every) >= herdFailThreads:
		c.Fatalf("a thundering herd: %d threads each woke for (nearly) every one of %d connections, beyond what a round trip wakes them for (%s); %s", len(every), herdConns, strings.Join(every, ", "), sets)
	default:
		c.Inconclusivef("2 threads each woke for every connection and %s: a herd of two waiters and an acceptor handing each connection to one loop look alike from outside", sets)
	}
}

// wakeupSampler returns a function reading the voluntary context
// switches of the threads that serve inst, by thread id: a live
// in-process reactor's loop threads from its statistics, else every
// thread of the instance's process group from /proc.
func wakeupSampler(inst Instance) (func() (map[int]uint64, error), error) {
	if _, err := inst.Stats(); err == nil {
		return func() (map[int]uint64, error) {
			st, err := inst.Stats()
			if err != nil {
				return nil, err
			}
			out := map[int]uint64{}
			for _, l := range st.PerLoop {
				out[l.Tid] = l.Wakeups
			}
			return out, nil
		}, nil
	}
	g, ok := inst.(interface{ Group() ([]int, error) })
	if !ok {
		return nil, fmt.Errorf("the target has no process of its own and no live statistics")
	}
	sample := func() (map[int]uint64, error) {
		pids, err := g.Group()
		if err != nil {
			return nil, err
		}
		return groupSwitches(pids), nil
	}
	if s, err := sample(); err != nil {
		return nil, err
	} else if len(s) == 0 {
		return nil, fmt.Errorf("no thread of the target's process group has a readable /proc/PID/task/TID/status")
	}
	return sample, nil
}

// groupSwitches reads the voluntary context switches of every thread of
// pids from /proc/PID/task/TID/status; a thread that ends while it is
// read, or whose status has no such line, is left out.
func groupSwitches(pids []int) map[int]uint64 {
	out := map[int]uint64{}
	for _, pid := range pids {
		tids, _ := procfs.Tasks(pid)
		for _, tid := range tids {
			if st, err := procfs.ReadTaskStatus(pid, tid); err == nil && st.VoluntarySwitches >= 0 {
				out[tid] = uint64(st.VoluntarySwitches)
			}
		}
	}
	return out
}
