//go:build linux

package diagnose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/internal/inetdiag"
	"github.com/reactorlab/reactorlab/internal/jsontime"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// waitCalls are the event waits, by system call number, with the index
// of the argument that holds a timeout in milliseconds (-1: the timeout
// is behind a pointer, or the call has none).
var waitCalls = map[int]waitCall{
	unix.SYS_EPOLL_PWAIT:    {"epoll_pwait", 3, true},
	unix.SYS_EPOLL_PWAIT2:   {"epoll_pwait2", -1, true},
	unix.SYS_PPOLL:          {"ppoll", -1, false},
	unix.SYS_PSELECT6:       {"pselect6", -1, false},
	unix.SYS_IO_URING_ENTER: {"io_uring_enter", -1, false},
}

// waitCall is an event wait: its name, the index of the argument that
// holds its timeout in milliseconds (-1: none, or behind a pointer), and
// whether its first argument is an epoll descriptor.
type waitCall struct {
	name    string
	timeout int
	epoll   bool
}

// restartedWaits names, by wait channel (/proc/TID/wchan), the event
// wait a thread resumes through restart_syscall: poll(2) interrupted
// before its events came (by a stop, or by task work the kernel runs in
// the thread, such as io_uring's completions for a loop that sleeps in
// poll on its ring's eventfd) is resumed by restart_syscall, which /proc
// shows in its place, and the wait channel is poll's.
var restartedWaits = map[string]string{"poll_schedule_timeout": "poll (restarted)"}

// callNames names the calls a blocked loop is commonly found in; another
// is named by its number.
var callNames = map[int]string{
	unix.SYS_FUTEX: "futex", unix.SYS_CLOCK_NANOSLEEP: "clock_nanosleep", unix.SYS_NANOSLEEP: "nanosleep",
	unix.SYS_READ: "read", unix.SYS_WRITE: "write", unix.SYS_READV: "readv", unix.SYS_WRITEV: "writev",
	unix.SYS_SENDTO: "sendto", unix.SYS_RECVFROM: "recvfrom", unix.SYS_SENDMSG: "sendmsg", unix.SYS_RECVMSG: "recvmsg",
	unix.SYS_ACCEPT4: "accept4", unix.SYS_CONNECT: "connect", unix.SYS_WAIT4: "wait4", unix.SYS_FSYNC: "fsync",
	unix.SYS_FDATASYNC: "fdatasync", unix.SYS_OPENAT: "openat", unix.SYS_PREAD64: "pread64", unix.SYS_PWRITE64: "pwrite64",
	unix.SYS_FLOCK: "flock", unix.SYS_FCNTL: "fcntl", unix.SYS_RT_SIGTIMEDWAIT: "rt_sigtimedwait",
}

func init() {
	for nr, w := range legacyWaitCalls {
		waitCalls[nr] = w
	}
	for nr, n := range legacyCallNames {
		callNames[nr] = n
	}
}

// callName is the name of system call nr.
func callName(nr int) string {
	if w, ok := waitCalls[nr]; ok {
		return w.name
	}
	if n, ok := callNames[nr]; ok {
		return n
	}
	return "system call " + strconv.Itoa(nr)
}

// which says what call, a thread of process pid found in a system call,
// is in: an event wait (its entry), or the name of another call. A
// restart_syscall is what its wait channel says it resumes.
func (o *observer) which(pid, tid int, call procfs.Syscall) (waitCall, bool, string) {
	if call.Nr != unix.SYS_RESTART_SYSCALL {
		w, ok := waitCalls[call.Nr]
		return w, ok, callName(call.Nr)
	}
	ch, err := procfs.ReadTaskWchan(pid, tid)
	if err != nil {
		o.cannot("wchan (the call a restart_syscall resumes)", err)
	}
	if name, ok := restartedWaits[ch]; ok {
		return waitCall{name: name, timeout: -1}, true, name
	}
	if ch == "" {
		return waitCall{}, false, "restart_syscall"
	}
	return waitCall{}, false, "restart_syscall in " + ch
}

// account is one reading of a thread's scheduler and io counts.
type account struct {
	sched            procfs.Schedstat
	schedOK          bool
	vol, invol       int64
	readCalls, bytes int64
	// writeCalls and writeBytes are io's syscw and wchar.
	writeCalls, writeBytes int64
}

// tracked is one thread followed through the window.
type tracked struct {
	th     Thread
	first  account
	epolls map[int]int // epoll descriptor → samples in a wait on it
	// timeouts is the least and the most timeout seen, in ms, per wait
	// (as WaitCalls names it) whose timeout is an argument.
	timeouts map[string][2]int
}

// lookResult is one look at one epoll set: the sockets registered
// level-triggered for EPOLLOUT with an empty send queue, those with
// unread bytes or queued connections, by inode, every socket's segments
// received so far (tcpi_segs_in) by inode, and the eventfds and pipes
// registered in it for EPOLLIN ("eventfd 5", "pipe 9"); fullTable is
// its listener registered level-triggered for EPOLLIN with the most
// connections queued while the process's table was full (nil: none).
type lookResult struct {
	idleWrite int
	unread    []uint64
	segs      map[uint64]uint32
	tokens    []string
	noInfo    bool // a socket of the set came without its tcp_info
	fullTable *FullTable
	// readable is the connections of the set registered level-triggered
	// for EPOLLIN with unread bytes, by inode, each matched to the
	// process's descriptor that holds it (/proc/PID/fd) and to its
	// tcp_info; a socket not so matched is not in it.
	readable map[uint64]readableSocket
}

// readableSocket is one look at a connection registered level-triggered
// for EPOLLIN with bytes in its receive queue: its cookie (which pins the
// connection across looks), the bytes unread, and the bytes the
// application had read since it was made (tcpi_bytes_received less the
// unread).
type readableSocket struct {
	cookie   uint64
	fd       int
	ends     string
	unread   uint32
	consumed uint64
}

// observer holds an observation's state.
type observer struct {
	pid     int
	threads map[int]*tracked
	looks   map[int][]lookResult // epoll descriptor → its looks
	// held is, per look, the segments received by every TCP socket the
	// process's descriptor table holds, in a set or not (a completion
	// loop's sockets are in its ring, in no set).
	held []lookResult
	// lookAt is when each look was taken, in order: a set's segments are
	// counted between its first look and its last, and scaled to the
	// window.
	lookAt     []time.Time
	unreadable map[string]bool
}

// Observe watches process pid for opt.Window and classifies its loop
// threads. It reads /proc and inet_diag only. The error is ErrNoProcess
// (wrapped, naming the pid) for a pid /proc does not show, ErrWindow for
// a window out of range, the context's error when ctx ends first, or one
// saying the process ended within the window.
func Observe(ctx context.Context, pid int, opt Options) (Report, error) {
	opt.Window = cmp.Or(opt.Window, DefaultWindow)
	opt.Interval = cmp.Or(opt.Interval, DefaultInterval)
	opt.Looks = cmp.Or(opt.Looks, DefaultLooks)
	if opt.Window < MinWindow || opt.Window > MaxWindow {
		return Report{}, fmt.Errorf("%v: %w", opt.Window, ErrWindow)
	}
	start := time.Now()
	st, err := procfs.ReadStat(pid)
	if pid <= 0 || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) || st.Zombie() {
		return Report{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	if err != nil {
		return Report{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	o := &observer{pid: pid, threads: map[int]*tracked{}, looks: map[int][]lookResult{}, unreadable: map[string]bool{}}
	if err := o.sample(); err != nil {
		return Report{}, err
	}
	// The samples run on the interval's clock; the looks are spread over
	// the window between them.
	t0 := time.Now()
	tick := time.NewTicker(opt.Interval)
	defer tick.Stop()
	nextLook := 1
	for {
		select {
		case <-ctx.Done():
			return Report{}, ctx.Err()
		case <-tick.C:
		}
		since := time.Since(t0)
		if since >= opt.Window {
			break
		}
		if err := o.sample(); err != nil {
			return Report{}, err
		}
		if nextLook <= opt.Looks && since >= time.Duration(nextLook)*opt.Window/time.Duration(opt.Looks+1) {
			nextLook++
			o.look()
		}
	}
	window := time.Since(t0)
	return o.report(st.Comm, window, opt, start)
}

// gone reports whether err says a process or thread no longer exists.
func gone(err error) bool { return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) }

// cannot records what could not be read for want of privilege, once per
// kind.
func (o *observer) cannot(what string, err error) {
	if errors.Is(err, fs.ErrPermission) {
		o.unreadable[what+": permission denied (a process of another user: run as that user or as root)"] = true
	} else if !gone(err) {
		o.unreadable[what+": "+err.Error()] = true
	}
}

// read reads a thread's account; schedOK, and counts of -1, say what was
// not there.
func (o *observer) read(tid int) account {
	a := account{vol: -1, invol: -1, readCalls: -1, bytes: -1, writeCalls: -1, writeBytes: -1}
	if s, err := procfs.ReadTaskSchedstat(o.pid, tid); err == nil {
		a.sched, a.schedOK = s, true
	} else {
		o.cannot("schedstat (run-queue wait)", err)
	}
	if s, err := procfs.ReadTaskStatus(o.pid, tid); err == nil {
		a.vol, a.invol = s.VoluntarySwitches, s.InvoluntarySwitches
	} else {
		o.cannot("status (context switches)", err)
	}
	if s, err := procfs.ReadTaskIO(o.pid, tid); err == nil {
		a.readCalls, a.bytes = s.ReadCalls, s.ReadBytes
		a.writeCalls, a.writeBytes = s.WriteCalls, s.WriteBytes
	} else {
		o.cannot("io (read calls and bytes)", err)
	}
	return a
}

// sample looks once at every thread: its state and the call it is in. A
// thread first seen here gets its first account read.
func (o *observer) sample() error {
	tids, err := procfs.Tasks(o.pid)
	if gone(err) {
		return fmt.Errorf("pid %d ended within the window", o.pid)
	}
	if err != nil {
		return fmt.Errorf("pid %d: listing its threads: %w", o.pid, err)
	}
	for _, tid := range tids {
		st, err := procfs.ReadTaskStat(o.pid, tid)
		if err != nil {
			o.cannot("stat", err)
			continue
		}
		tr := o.threads[tid]
		if tr == nil {
			tr = &tracked{th: Thread{Tid: tid, EpollFd: -1, InCall: map[string]int{}, WaitCalls: map[string]int{}}, epolls: map[int]int{}, timeouts: map[string][2]int{}}
			tr.first = o.read(tid)
			o.threads[tid] = tr
		}
		tr.th.Comm = st.Comm
		call, err := procfs.ReadTaskSyscall(o.pid, tid)
		if err != nil {
			o.cannot("syscall (the call a thread is in)", err)
			continue
		}
		t := &tr.th
		t.Samples++
		if st.State == "D" {
			t.StateD++
		}
		if !call.InCall {
			t.Running++
			continue
		}
		w, isWait, named := o.which(o.pid, tid, call)
		if !isWait {
			t.InCall[named]++
			continue
		}
		t.InWait++
		name := w.name
		if w.epoll {
			fd := int(int32(call.Args[0]))
			tr.epolls[fd]++
			name += " on " + strconv.Itoa(fd)
		}
		t.WaitCalls[name]++
		if w.timeout >= 0 {
			ms := int(int32(call.Args[w.timeout]))
			r, ok := tr.timeouts[name]
			if !ok {
				r = [2]int{ms, ms}
			}
			tr.timeouts[name] = [2]int{min(r[0], ms), max(r[1], ms)}
		}
	}
	return nil
}

// look reads every epoll set of the process once, and the kernel's TCP
// tables, and counts per set the sockets held for EPOLLOUT,
// level-triggered, with an empty send queue, and those with unread bytes,
// and finds its listener held level-triggered for EPOLLIN with
// connections queued while the process's descriptor table was full (the
// descriptors it holds against its soft RLIMIT_NOFILE, from
// /proc/PID/limits).
func (o *observer) look() {
	fds, err := procfs.ReadFds(o.pid)
	if err != nil {
		o.cannot("the descriptor table", err)
		return
	}
	var epolls []int
	token := map[int]string{}  // descriptor → "eventfd N" or "pipe N"
	sockFd := map[int]uint64{} // descriptor → its socket's inode
	for _, f := range fds {
		if ino, ok := f.SocketInode(); ok {
			sockFd[f.Num] = ino
		}
		switch {
		case f.Target == procfs.EpollTarget:
			epolls = append(epolls, f.Num)
		case f.Target == procfs.EventfdTarget:
			token[f.Num] = "eventfd " + strconv.Itoa(f.Num)
		case strings.HasPrefix(f.Target, "pipe:"):
			token[f.Num] = "pipe " + strconv.Itoa(f.Num)
		}
	}
	// The table is full at the soft limit less fullTableMargin; an
	// unlimited or unread limit is never full.
	limit, _, err := procfs.ReadFdLimit(o.pid)
	if err != nil {
		o.cannot("limits (the descriptor limit)", err)
	}
	full := err == nil && limit >= 0 && int64(len(fds)) >= limit-fullTableMargin
	socks := map[uint64]inetdiag.Socket{}
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		ss, err := inetdiag.DumpInfo(fam)
		if err != nil {
			o.cannot("the kernel's TCP tables (inet_diag)", err)
			return
		}
		for _, s := range ss {
			if s.Inode != 0 {
				socks[uint64(s.Inode)] = s
			}
		}
	}
	o.lookAt = append(o.lookAt, time.Now())
	held := lookResult{segs: map[uint64]uint32{}}
	for _, ino := range sockFd {
		if s, ok := socks[ino]; ok {
			held.segs[ino] = s.SegsIn
			held.noInfo = held.noInfo || !s.HasInfo
		}
	}
	o.held = append(o.held, held)
	if len(epolls) == 0 {
		return
	}
	for _, ep := range epolls {
		items, err := procfs.ReadEpollItems(o.pid, ep)
		if err != nil {
			o.cannot("an epoll descriptor's fdinfo", err)
			continue
		}
		r := lookResult{segs: map[uint64]uint32{}, readable: map[uint64]readableSocket{}}
		for _, it := range items {
			if tok, ok := token[it.Fd]; ok && it.Events&unix.EPOLLIN != 0 {
				r.tokens = append(r.tokens, tok)
			}
			s, ok := socks[it.Ino]
			if !ok {
				continue
			}
			r.segs[it.Ino] = s.SegsIn
			r.noInfo = r.noInfo || !s.HasInfo
			if it.Events&unix.EPOLLOUT != 0 && it.Events&unix.EPOLLET == 0 && s.State == inetdiag.Established && s.Unsent == 0 {
				r.idleWrite++
			}
			if s.Unread > 0 && it.Events&unix.EPOLLIN != 0 {
				r.unread = append(r.unread, it.Ino)
			}
			// A connection readable now, level-triggered: every wait on
			// the set returns for it until its bytes are read. Matched to
			// the descriptor the item names and to its tcp_info, or left
			// out.
			if s.Unread > 0 && it.Events&unix.EPOLLIN != 0 && it.Events&(unix.EPOLLET|unix.EPOLLONESHOT) == 0 &&
				(s.State == inetdiag.Established || s.State == inetdiag.CloseWait) && s.HasInfo && sockFd[it.Fd] == it.Ino &&
				s.BytesReceived >= uint64(s.Unread) {
				r.readable[it.Ino] = readableSocket{cookie: s.Cookie, fd: it.Fd, ends: s.Local.String() + "→" + s.Remote.String(),
					unread: s.Unread, consumed: s.BytesReceived - uint64(s.Unread)}
			}
			// A listener's Unread is its accept queue.
			if full && s.State == inetdiag.Listen && s.Unread > 0 && it.Events&unix.EPOLLIN != 0 && it.Events&unix.EPOLLET == 0 &&
				(r.fullTable == nil || int(s.Unread) > r.fullTable.Queued) {
				r.fullTable = &FullTable{Listener: s.Local.String(), Queued: int(s.Unread), Open: len(fds), Limit: limit}
			}
		}
		o.looks[ep] = append(o.looks[ep], r)
	}
}

// report reads every thread's account again, takes the differences,
// picks the loop threads and classifies them.
func (o *observer) report(comm string, window time.Duration, opt Options, start time.Time) (Report, error) {
	r := Report{Pid: o.pid, Comm: comm, Window: jsontime.Seconds(window), Interval: jsontime.Seconds(opt.Interval), Method: Method()}
	// A set whose waits never block is never seen waited on: the sets no
	// thread was seen in are the candidates of the threads never seen in
	// an epoll wait.
	waited := map[int]bool{}
	for _, tr := range o.threads {
		for fd := range tr.epolls {
			waited[fd] = true
		}
	}
	var unseen []int
	for _, fd := range slices.Sorted(maps.Keys(o.looks)) {
		if !waited[fd] {
			unseen = append(unseen, fd)
		}
	}
	// Every live thread's last account, and the process's token writes:
	// the write calls of the threads whose writes averaged tokenBytes or
	// less (an eventfd's 8-byte counter, a pipe's wakeup byte).
	lasts := map[int]account{}
	var tokenWrites int64
	tokenWriters, writesKnown := 0, true
	for _, tid := range slices.Sorted(maps.Keys(o.threads)) {
		if _, err := procfs.ReadTaskStat(o.pid, tid); err != nil {
			continue
		}
		last := o.read(tid)
		lasts[tid] = last
		calls, bytes := diff(o.threads[tid].first.writeCalls, last.writeCalls), diff(o.threads[tid].first.writeBytes, last.writeBytes)
		if calls < 0 || bytes < 0 {
			writesKnown = false
			continue
		}
		if calls > 0 && bytes <= calls*tokenBytes {
			tokenWrites += calls
			tokenWriters++
		}
	}
	// The segments of every socket the process holds, for a thread whose
	// set holds none (a worker woken by tokens for work another thread
	// polled, a completion loop whose sockets are in its ring: its unit
	// of work is a segment the process received).
	processSegments := o.segments(o.held, window)
	for _, tid := range slices.Sorted(maps.Keys(o.threads)) {
		tr := o.threads[tid]
		last, live := lasts[tid]
		if !live {
			r.Ended++
			continue
		}
		t := tr.th
		t.WaitTimeouts = map[string]string{}
		for w, r := range tr.timeouts {
			t.WaitTimeouts[w] = strconv.Itoa(r[0]) + " ms"
			if r[1] != r[0] {
				t.WaitTimeouts[w] = strconv.Itoa(r[0]) + ".." + strconv.Itoa(r[1]) + " ms"
			}
		}
		t.Run, t.RunqWait = -1, -1
		if tr.first.schedOK && last.schedOK {
			t.Run = jsontime.Seconds(last.sched.RunNs - tr.first.sched.RunNs)
			t.RunqWait = jsontime.Seconds(last.sched.WaitNs - tr.first.sched.WaitNs)
		} else {
			t.Unreadable = append(t.Unreadable, "schedstat: its CPU and run-queue wait are unknown")
		}
		t.Voluntary, t.Involuntary = diff(tr.first.vol, last.vol), diff(tr.first.invol, last.invol)
		t.ReadCalls, t.ReadBytes = diff(tr.first.readCalls, last.readCalls), diff(tr.first.bytes, last.bytes)
		most := 0
		for _, fd := range slices.Sorted(maps.Keys(tr.epolls)) {
			if n := tr.epolls[fd]; n > most {
				t.EpollFd, most = fd, n
			}
		}
		sets := unseen
		if t.EpollFd >= 0 {
			sets = []int{t.EpollFd}
		} else if len(unseen) > 0 {
			t.EpollUnseen = true
		}
		t.Segments, t.TokenWrites, t.TokenWriters = -1, -1, 0
		if len(sets) == 0 {
			// No set to read: its unit of work is a segment the process
			// received (a completion loop with no epoll set at all).
			t.Segments, t.SegmentsOfProcess = processSegments, true
		}
		if writesKnown {
			t.TokenWrites, t.TokenWriters = tokenWrites, tokenWriters
		}
		for _, fd := range sets {
			var s Thread
			unread := map[uint64]int{} // socket → looks it had unread bytes in
			looks := o.looks[fd]
			s.Segments = o.segments(looks, window)
			if !slices.ContainsFunc(looks, func(l lookResult) bool { return len(l.segs) > 0 }) {
				s.Segments, s.SegmentsOfProcess = processSegments, true
			}
			s.NeverReadLooks, s.NeverRead = neverRead(looks)
			tokens := map[string]bool{}
			for _, l := range looks {
				for _, tok := range l.tokens {
					tokens[tok] = true
				}
			}
			s.TokenFds = slices.Sorted(maps.Keys(tokens))
			for _, l := range looks {
				s.Looks++
				if l.idleWrite > 0 {
					s.IdleWriteLooks++
				}
				s.MostIdleWrite = max(s.MostIdleWrite, l.idleWrite)
				if f := l.fullTable; f != nil {
					s.FullTableLooks++
					if s.FullTable == nil || f.Queued > s.FullTable.Queued {
						s.FullTable = f
					}
				}
				for _, ino := range l.unread {
					unread[ino]++
					s.UnreadLooks = max(s.UnreadLooks, unread[ino])
				}
			}
			// Of several candidate sets, the one most often holding idle
			// write interest, a listener refused for want of descriptors
			// or a connection readable and never read speaks for the
			// thread.
			if t.EpollUnseen && (s.IdleWriteLooks+s.FullTableLooks+s.NeverReadLooks > t.IdleWriteLooks+t.FullTableLooks+t.NeverReadLooks || t.Looks == 0) {
				t.EpollFd = fd
			}
			if fd == t.EpollFd {
				t.Looks, t.IdleWriteLooks, t.MostIdleWrite, t.UnreadLooks = s.Looks, s.IdleWriteLooks, s.MostIdleWrite, s.UnreadLooks
				t.FullTableLooks, t.FullTable = s.FullTableLooks, s.FullTable
				t.NeverReadLooks, t.NeverRead = s.NeverReadLooks, s.NeverRead
				t.Segments, t.SegmentsOfProcess, t.TokenFds = s.Segments, s.SegmentsOfProcess, s.TokenFds
			}
		}
		if t.Samples > 0 {
			r.Sampled++
		}
		if t.InWait == 0 && (t.Run < 0 || time.Duration(t.Run)*100 < window*loopCPUShare) {
			r.Others++
			continue
		}
		if t.Samples == 0 {
			t.Unreadable = append(t.Unreadable, "no sample of the call it was in")
		}
		r.Threads = append(r.Threads, t)
	}
	// The busy threads that may have served each loop thread's set: those
	// that ran a tenth of the window and waited on that set, or on no
	// epoll set at all (a runtime's worker that runs the set's work
	// between its waits, never seen in them).
	for i := range r.Threads {
		t := &r.Threads[i]
		for j, u := range r.Threads {
			busy := u.Run >= 0 && time.Duration(u.Run)*100 >= window*loopCPUShare
			if j != i && busy && t.EpollFd >= 0 && (u.EpollFd == t.EpollFd && !u.EpollUnseen || len(o.threads[u.Tid].epolls) == 0) {
				t.BusySharers++
			}
		}
		Classify(t, window)
	}
	r.Unreadable = slices.Sorted(maps.Keys(o.unreadable))
	r.Elapsed = jsontime.Seconds(time.Since(start))
	return r, nil
}

// neverRead finds, in one set's looks, the connection most often found
// readable and not read: a look counts for a connection when it and the
// look before both found it (the same cookie) registered level-triggered
// for EPOLLIN with unread bytes, and the bytes it had read were the same
// at both (none read between them). It returns that connection's count
// and figures (nil when no look counted).
func neverRead(looks []lookResult) (int, *NeverRead) {
	counts := map[uint64]int{}
	most := 0
	var out *NeverRead
	for i := 1; i < len(looks); i++ {
		for ino, now := range looks[i].readable {
			was, ok := looks[i-1].readable[ino]
			if !ok || was.cookie != now.cookie || was.consumed != now.consumed {
				continue
			}
			counts[ino]++
			if n := counts[ino]; n > most || n == most && out != nil && now.fd < out.Fd {
				most = n
				out = &NeverRead{Socket: now.ends, Fd: now.fd, Unread: int64(now.unread), Read: int64(now.consumed)}
			}
		}
	}
	return most, out
}

// segments is the segments the sockets of one set's looks received
// between the first look and the last, scaled to the window (the looks
// span the middle of it): for a socket seen at the first look, its count
// at its last sighting less that at the first; for one that appeared
// later, its count when last seen (all it received: a connection made
// within the window). -1 when a socket's counts were not read, or there
// were fewer than two looks.
func (o *observer) segments(looks []lookResult, window time.Duration) int64 {
	if len(looks) < 2 || len(o.lookAt) < 2 {
		return -1
	}
	for _, l := range looks {
		if l.noInfo {
			return -1
		}
	}
	span := o.lookAt[len(o.lookAt)-1].Sub(o.lookAt[0])
	if span <= 0 {
		return -1
	}
	first, last := map[uint64]uint32{}, map[uint64]uint32{}
	for i, l := range looks {
		for ino, n := range l.segs {
			if _, seen := first[ino]; !seen {
				first[ino] = n
				if i > 0 {
					first[ino] = 0
				}
			}
			last[ino] = n
		}
	}
	var n int64
	for ino, f := range first {
		n += int64(last[ino] - f)
	}
	return int64(float64(n) * float64(window) / float64(span))
}

// diff is b - a, or -1 when either is unknown.
func diff(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return b - a
}
