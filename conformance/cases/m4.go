package cases

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
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
// idle (or beyond the round trips') for the herdConns connections
// (m4EveryLimit, m4NoisyLimit), and on all threads' together
// (m4TotalLimit); herdFailThreads threads that each woke for (nearly)
// every connection are several waiters on one listener even where no
// waiter on it is seen.
const (
	herdThreadShare = 0.75
	herdFailThreads = 3
	herdNoisyShare  = 0.5
	herdTotalShare  = 1.5
)

// m4Loops is the data loops a multi-loop reference design runs in M4:
// enough that a herd (4 wakeups a connection) stands far above what a
// design needs (1, or 2 with a handoff).
const m4Loops = 4

// m4ReferenceLimit is the most a reference reactor's loop threads may
// wake for each new connection beyond what a round trip on an open one
// wakes them for: what its design needs to accept a connection and take
// it on (one loop; two where it hands connections over, the acceptor and
// the sub-loop), plus one.
func m4ReferenceLimit(handoff bool) (limit float64, arithmetic string) {
	need, why := 1, "1"
	if handoff {
		need, why = 2, "2 (a handoff)"
	}
	limit = float64(need + 1)
	return limit, fmt.Sprintf("need %s + 1 = %.0f wakeups a connection", why, limit)
}

// m4EveryLimit is the wakeups for the herdConns connections, beyond a
// round trip's or beyond idle, at which a thread counts as woken by
// (nearly) every connection, and at which all the threads together count
// as seen waking for the connections at all.
func m4EveryLimit() (limit float64, arithmetic string) {
	limit = herdThreadShare * herdConns
	return limit, fmt.Sprintf("%.0f%% of %d connections = %.0f wakeups", 100*herdThreadShare, herdConns, limit)
}

// m4NoisyLimit is the idle wakeups beyond which a thread (or the
// reference's loops together) is too busy idle to tell whether it woke
// for every connection.
func m4NoisyLimit() (limit float64, arithmetic string) {
	limit = herdNoisyShare * herdConns
	return limit, fmt.Sprintf("%.0f%% of %d connections = %.0f idle wakeups", 100*herdNoisyShare, herdConns, limit)
}

// m4TotalLimit is the wakeups beyond the round trips', all threads
// together, at which a listener the kernel wakes several waiters on
// fails: accepting needs one waiter woken a connection, and herdTotalShare
// a connection means a second waiter woke for half the connections or
// more, even where a runtime moves that waiter between threads so that no
// single thread reaches m4EveryLimit (a Go server: its poller goroutine
// and the runtime's netpoller each hold the listener).
func m4TotalLimit() (limit float64, arithmetic string) {
	limit = herdTotalShare * herdConns
	return limit, fmt.Sprintf("%.1f × %d connections = %.0f wakeups", herdTotalShare, herdConns, limit)
}

// m4Case is M4: new connections on an idle server wake no more of its
// threads than its design needs to accept and take them on: no thundering
// herd.
func m4Case() conformance.Case {
	_, refLimit := m4ReferenceLimit(false)
	_, handoffLimit := m4ReferenceLimit(true)
	_, every := m4EveryLimit()
	_, total := m4TotalLimit()
	_, noisy := m4NoisyLimit()
	return conformance.Case{
		ID:    "M4",
		Title: "no thundering herd",
		Claim: fmt.Sprintf("%d connections opened %v apart on an idle server wake, for each, no more of its threads than its design needs to accept the connection and take it on. "+
			"A black box is judged on the waiters the kernel wakes on its listener for every connection (epoll instances holding it without EPOLLEXCLUSIVE, threads in poll or select on it, one exclusive waiter) and on how many of its threads wake for (nearly) every connection", herdConns, herdGap),
		BlackBoxBugs: []string{"herd", "herd-poll"},
		Bound: fmt.Sprintf("wakeups are voluntary context switches over %v each: idle, %d round trips on one open connection, %d new connections. "+
			"Reference: its loops' wakeups a connection beyond a round trip's ≤ %s; with a handoff, %s. "+
			"Black box with 2 or more waiters on its listener: fails when 2 threads each wake ≥ %s for the connections beyond the round trips (or beyond idle), or all together ≥ %s; with one it passes; with none seen, %d such threads fail and 2 are inconclusive. "+
			"Inconclusive where idle wakeups over %s leave the verdict open, or the wakeups for the connections beyond idle stay below %s",
			herdConns*herdGap, herdConns, herdConns, refLimit, handoffLimit, every, total, herdFailThreads, noisy, every),
		Setup:   conformance.Setup{Tweak: m4Tweak},
		Timeout: 30 * time.Second,
		Run:     runM4,
	}
}

// m4Tweak gives a multi-loop design m4Loops data loops, and every design
// deadline timers (no periodic tick): every wakeup is then an event's.
func m4Tweak(d reactors.DesignName, cfg *reactors.Config) {
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

func runM4(c *conformance.C) {
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
func measureHerd(c *conformance.C, sample func() (map[int]uint64, error)) []threadWakeups {
	read := func() map[int]uint64 {
		s, err := sample()
		if err != nil {
			c.Fatalf("reading the server's wakeups: %v", err)
		}
		return s
	}
	addr := c.Instance().Addr()
	probe := dialQuiet(c, "round-trip conn", addr)
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
		conn := dialQuiet(c, fmt.Sprintf("conn %d", i+1), addr)
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
func herdRoundTrip(c *conformance.C, conn net.Conn, token, seq uint64) {
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
func judgeReferenceHerd(c *conformance.C, threads []threadWakeups) {
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
	limit, arithmetic := m4ReferenceLimit(st.Counters.Handoffs > 0)
	noisy, noisyArithmetic := m4NoisyLimit()
	seen, seenArithmetic := m4EveryLimit()
	per := (conns - requests) / herdConns
	c.Evidencef("loop threads: %.0f wakeups idle, %.0f for the round trips, %.0f for the connections: %.2f a connection beyond a round trip; bound: %s", idle, requests, conns, per, arithmetic)
	c.Logf("loop wakeups a connection beyond a round trip: %.2f (idle %.0f; bound %.0f)", per, idle, limit)
	switch {
	case per > limit:
		c.Fatalf("a thundering herd: the loops woke %.2f times more for each new connection than for a round trip on an open one; bound: %s", per, arithmetic)
	case idle > noisy:
		c.Inconclusivef("the loops woke %.0f times while idle, more than %s: the signal cannot be read", idle, noisyArithmetic)
	case conns-idle < seen:
		c.Inconclusivef("%s (seen: %s)", unseenWakeups("the loops", idle, conns), seenArithmetic)
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
func judgeBlackBoxHerd(c *conformance.C, threads []threadWakeups) {
	// every: woke for (nearly) every connection beyond what as many round
	// trips wake it for; woken: woke for (nearly) every connection beyond
	// idle (every is among them, and so is a thread that serves the
	// connections it accepts); noisy: too busy idle to tell.
	everyLimit, everyArithmetic := m4EveryLimit()
	noisyLimit, noisyArithmetic := m4NoisyLimit()
	totalLimit, totalArithmetic := m4TotalLimit()
	var every, woken, noisy []string
	var idle, conns, excess float64
	for _, w := range threads {
		idle, conns, excess = idle+float64(w.idle), conns+float64(w.conns), excess+w.excess()
		isEvery := w.excess() >= everyLimit
		isNoisy := !isEvery && float64(w.idle) > noisyLimit && float64(w.conns) >= everyLimit
		switch {
		case isEvery:
			every, woken = append(every, w.id), append(woken, w.id)
		case isNoisy:
			noisy = append(noisy, w.id)
		case float64(w.conns)-float64(w.idle) >= everyLimit:
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
	c.Evidencef("threads that woke for ≥ %s beyond the round trips: %d (%s); beyond idle: %d (%s); too noisy to tell (idle > %s): %d (%s); all threads together %.0f wakeups beyond the round trips' (%.2f a connection; limit %s); %s",
		everyArithmetic, len(every), strings.Join(every, ", "), len(woken), strings.Join(woken, ", "), noisyArithmetic, len(noisy), strings.Join(noisy, ", "), excess, excess/herdConns, totalArithmetic, sets)
	c.Logf("threads waking for every connection: %d beyond the round trips, %d beyond idle; noisy: %d; wakeups a connection beyond a round trip, all threads: %.2f; %s", len(every), len(woken), len(noisy), excess/herdConns, sets)
	// known: the server is seen waiting on its listener (epoll, poll or
	// select); shared: the kernel wakes several of its waiters for every
	// connection.
	known := serr == nil && waits.any()
	shared := known && waits.sharers() >= 2
	switch {
	case len(every) >= 2 && shared:
		c.Fatalf("a thundering herd: %d threads each woke ≥ %s beyond what a round trip wakes them for (%s), and %s", len(every), everyArithmetic, strings.Join(every, ", "), sets)
	case shared && len(woken) >= 2 && len(noisy) == 0:
		// The kernel wakes each waiter for every connection, and as many
		// threads each woke for (nearly) every one: the waiters did wake,
		// whatever else (a round trip on a connection a waiter accepted
		// itself) woke them too.
		c.Fatalf("a thundering herd: %s, and %d threads each woke ≥ %s beyond idle (%s): several waiters woke for each connection", sets, len(woken), everyArithmetic, strings.Join(woken, ", "))
	case shared && excess >= totalLimit && len(noisy) == 0:
		c.Fatalf("a thundering herd: %s, and its threads together woke %.0f times for the connections beyond what as many round trips wake them for, ≥ %s (accepting needs one waiter): several waiters woke for each connection", sets, excess, totalArithmetic)
	case len(woken)+len(noisy) >= 2 && shared:
		c.Inconclusivef("%d threads woke ≥ %s beyond idle and %d more woke over %s, so that they may have too, and %s: a herd cannot be told from the noise", len(woken), everyArithmetic, len(noisy), noisyArithmetic, sets)
	case conns-idle < everyLimit:
		c.Inconclusivef("%s (seen: %s)", unseenWakeups("the server's threads", idle, conns), everyArithmetic)
	case len(every) <= 1 || known:
		// At most one waiter on the listener wakes for each connection:
		// threads woken besides are a hand-over's and the runtime's, not a
		// herd.
	case len(every) >= herdFailThreads:
		c.Fatalf("a thundering herd: %d threads (≥ %d) each woke ≥ %s beyond what a round trip wakes them for (%s); %s", len(every), herdFailThreads, everyArithmetic, strings.Join(every, ", "), sets)
	default:
		c.Inconclusivef("2 threads each woke ≥ %s beyond what a round trip wakes them for, fewer than the %d that fail with no waiter seen, and %s: a herd of two waiters and an acceptor handing each connection to one loop look alike from outside", everyArithmetic, herdFailThreads, sets)
	}
}

// wakeupSampler returns a function reading the voluntary context
// switches of the threads that serve inst, by thread id: a live
// in-process reactor's loop threads from its statistics, else every
// thread of the instance's process group from /proc.
func wakeupSampler(inst conformance.Instance) (func() (map[int]uint64, error), error) {
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
