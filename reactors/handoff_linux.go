//go:build linux

package reactors

import (
	"math"
	"time"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// The multi-loop mechanism: mainsub's handoff from the acceptor to its
// sub-loops, the loops' busy accounting (what least-loaded reads), and
// each loop's own figures (LoopStats).

// isAcceptor reports whether l is a handoff layout's acceptor (loop 0).
func (l *Loop) isAcceptor() bool { return l.id == 0 && l.r.layout.Listener == ListenerHandoff }

// handOff gives the data connection fd, accepted by the acceptor l at
// acceptedAt, to a sub-loop. Connections already waiting for room go
// first, so the order of acceptance is kept; with every sub-loop's ingress
// full it waits in l.handoffBacklog (bounded by MaxConns: beyond, it is
// refused and counted), retried every round.
func (l *Loop) handOff(fd int, acceptedAt int64) {
	m := message{kind: msgConn, fd: int32(fd), at: acceptedAt}
	if len(l.handoffBacklog) == 0 && l.pushConn(m) {
		return
	}
	if len(l.handoffBacklog) >= l.cfg.MaxConns {
		unix.Close(fd)
		l.stats.ConnsRefused++
		return
	}
	l.handoffBacklog = append(l.handoffBacklog, m)
	l.stats.HandoffBacklogMax = max(l.stats.HandoffBacklogMax, uint64(len(l.handoffBacklog)))
}

// pushConn hands m to the sub-loop the assignment picks, or, if its
// ingress is full, to the next one with room. It reports false when every
// sub-loop's ingress was full. The HandoffDropWhenFull mutant closes the
// connection instead when the first choice is full.
func (l *Loop) pushConn(m message) bool {
	subs := l.r.loops[1:]
	first := l.r.pickSub(subs)
	for i := range subs {
		sub := subs[(first+i)%len(subs)]
		sub.handingIn.Add(1)
		if sub.ingress.Push(m) {
			l.stats.Handoffs++
			return true
		}
		sub.handingIn.Add(-1)
		l.stats.HandoffFull++
		if l.cfg.Faults.HandoffDropWhenFull {
			unix.Close(int(m.fd)) // the mutant: the connection is lost
			return true
		}
	}
	return false
}

// retryHandoffs hands the waiting connections on, in order, until one
// still finds no room.
func (l *Loop) retryHandoffs() {
	n := 0
	for _, m := range l.handoffBacklog {
		if !l.pushConn(m) {
			break
		}
		n++
	}
	if n > 0 {
		rest := copy(l.handoffBacklog, l.handoffBacklog[n:])
		clear(l.handoffBacklog[rest:])
		l.handoffBacklog = l.handoffBacklog[:rest]
		l.progress += uint64(n)
	}
}

// refuseBacklog closes the connections still waiting for a sub-loop when
// the acceptor sees the stop: they were never served.
func (l *Loop) refuseBacklog() {
	for _, m := range l.handoffBacklog {
		unix.Close(int(m.fd))
		l.stats.ConnsRefused++
	}
	clear(l.handoffBacklog)
	l.handoffBacklog = l.handoffBacklog[:0]
}

// pickSub is the index in subs of the sub-loop Config.Assign picks.
func (r *Reactor) pickSub(subs []*Loop) int {
	start := int(r.nextSub.Add(1)-1) % len(subs)
	if r.assign == AssignRoundRobin {
		return start
	}
	now := nanotime()
	best, bestScore, bestConns := start, math.Inf(1), int64(math.MaxInt64)
	for i := range subs {
		j := (start + i) % len(subs) // ties go round-robin
		sub := subs[j]
		conns := sub.open.Load() + sub.handingIn.Load()
		score := 0.0
		if r.assign == AssignLeastLoaded {
			score = sub.recentBusy() + float64(sub.ingressAge(now))/float64(10*time.Millisecond)
		}
		if score < bestScore || (score == bestScore && conns < bestConns) {
			best, bestScore, bestConns = j, score, conns
		}
	}
	return best
}

// ingressAge is how long items have waited in l's ingress at most: the
// time since l last drained it, when it holds any; 0 when it is empty.
func (l *Loop) ingressAge(now int64) int64 {
	if l.ingress == nil || l.ingress.Len() == 0 {
		return 0
	}
	return max(0, now-l.lastDrain.Load())
}

// recentBusy is l's busy fraction over its last completed window of at
// least busyWindow (0 before the first).
func (l *Loop) recentBusy() float64 { return math.Float64frombits(l.busyRecent.Load()) }

// busyWindow is the span least-loaded's busy fraction is measured over.
const busyWindow = 10e6 // ns

// noteBusy closes the loop's busy span at now (before a blocking wait;
// the round after it opens the next). The publish that follows updates
// the recent busy fraction.
func (l *Loop) noteBusy(now int64) {
	if l.awakeAt != 0 {
		l.stats.BusyNs += uint64(max(0, now-l.awakeAt))
		l.awakeAt = 0
	}
}

func (l *Loop) updateRecentBusy(now int64) {
	if d := now - l.windowAt; d >= busyWindow {
		busy := l.stats.BusyNs
		if l.awakeAt != 0 {
			busy += uint64(max(0, now-l.awakeAt))
		}
		frac := float64(busy-l.windowBusy) / float64(d)
		l.busyRecent.Store(math.Float64bits(min(1, max(0, frac))))
		l.windowAt, l.windowBusy = now, busy
	}
}

// adoptConn registers a connection from the ingress (a handoff, or the
// ServeOnTwoLoops mutant's twin) and records the handoff latency.
func (l *Loop) adoptConn(m message) {
	fd := int(m.fd)
	if !m.twin {
		l.handingIn.Add(-1)
	}
	if l.stopSeen || l.r.stopRequested.Load() {
		unix.Close(fd)
		l.stats.ConnsRefused++
		return
	}
	s := l.addConn(fd, false)
	if s == nil {
		return
	}
	if m.twin {
		s.twinned = true
		return
	}
	l.stats.HandoffsIn++
	l.hist.record(l.hist.handoff, nanotime()-m.at)
	s.acceptedAt = m.at
	l.twin(s)
}

// twin is the ServeOnTwoLoops mutant: it registers a duplicate of new data
// connection s's descriptor on the next data loop as well, so two loops
// read and write one socket. Off (the correct reactor), it does nothing.
func (l *Loop) twin(s *Source) {
	if !l.cfg.Faults.ServeOnTwoLoops || s.control {
		return
	}
	var data []*Loop
	for _, o := range l.r.loops {
		if !o.isAcceptor() && o.ingress != nil {
			data = append(data, o)
		}
	}
	if len(data) < 2 {
		return
	}
	next := data[0]
	for i, o := range data {
		if o == l {
			next = data[(i+1)%len(data)]
		}
	}
	dup, err := unix.FcntlInt(uintptr(s.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	s.twinned = true
	if !next.ingress.Push(message{kind: msgConn, fd: int32(dup), twin: true}) {
		unix.Close(dup)
	}
}

// role is l's role in its reactor's layout (LoopStats.Role).
func (l *Loop) role() string {
	lay := l.r.layout
	switch {
	case lay.Shared:
		return RoleWorker
	case l.isAcceptor():
		return RoleAcceptor
	case lay.Listener == ListenerHandoff:
		return RoleSubLoop
	case lay.Loops == 2 && lay.ControlLoop == 1 && lay.Listener == ListenerOnFirst:
		if l.id == 1 {
			return RoleControl
		}
		return RoleData
	}
	return RoleLoop
}

// loopStats is l's LoopStats from counters c, at now (its lifetime's end
// while it runs).
func (l *Loop) loopStats(c Counters, now int64) LoopStats {
	s := LoopStats{Loop: l.id, Role: l.role(), Tid: int(l.tid.Load()), Conns: c.ConnsAccepted, Frames: c.FramesIn,
		AcceptWakeups: c.AcceptWakeups, Accepts: c.Accepts, UselessAcceptWakeups: c.UselessAcceptWakeups,
		Handoffs: c.Handoffs, HandoffsIn: c.HandoffsIn, HandoffFull: c.HandoffFull, StopObservedNs: l.stopObservedNs.Load(),
		RingEnters: c.RingEnters, Completions: c.Completions, EnobufsRearms: c.EnobufsRearms, CQOverflowFlushes: c.CQOverflowFlushes}
	end := now
	if e := l.endedAt.Load(); e != 0 {
		end = e
	}
	if start := l.r.startNs.Load(); start != 0 && end-start > 0 {
		life := end - start
		s.Busy = min(1, float64(c.BusyNs)/float64(life))
		cpu := l.cpuAtExit.Load()
		if cpu <= 0 && s.Tid != 0 {
			cpu = max(threadCPU(s.Tid), 0)
		}
		s.CPU = min(1, float64(max(0, cpu-l.cpuAtStart.Load()))/float64(life))
	}
	sw := l.vcswAtExit.Load()
	if sw < 0 && s.Tid != 0 {
		sw = threadSwitches(s.Tid)
	}
	if sw >= 0 {
		s.Wakeups = uint64(max(0, sw-l.vcswAtStart.Load()))
	}
	return s
}

// ownSwitches is the calling thread's voluntary context switches (-1 if
// the kernel does not say).
func ownSwitches() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return -1
	}
	return ru.Nvcsw
}

// threadSwitches is thread tid's (of this process) voluntary context
// switches, from /proc/self/task/TID/status; -1 if it cannot be read.
func threadSwitches(tid int) int64 {
	st, err := procfs.ReadTaskStatus(procfs.Self, tid)
	if err != nil {
		return -1
	}
	return st.VoluntarySwitches // -1 without the line
}
