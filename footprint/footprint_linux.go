//go:build linux

package footprint

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/wire"
)

// Options bound a measurement.
type Options struct {
	// Conns is the number of idle connections, 1..1,000,000 (0: 10,000).
	Conns int
	// Timeout bounds the whole measurement, start to stop (0: 2 minutes).
	Timeout time.Duration
	// StartTimeout bounds the target's start, until it accepts
	// connections (0: conformance.DefaultStartTimeout; at most Timeout).
	StartTimeout time.Duration
}

// Result is one measurement. RSS figures are of the target's whole process
// group, sampled from /proc; PerConn is (After − Before) / Conns.
type Result struct {
	Target string `json:"target"`
	Conns  int    `json:"conns"`
	// Before is the server's RSS once it accepts connections, After its
	// RSS with every connection open, echoed once and idle.
	Before  int64   `json:"rss_before_bytes"`
	After   int64   `json:"rss_after_bytes"`
	PerConn float64 `json:"rss_per_conn_bytes"`
	// ServerFds is the server's open descriptors with the connections
	// open: at least Conns, or it did not hold them.
	ServerFds int           `json:"server_fds"`
	Elapsed   time.Duration `json:"elapsed_ns"`
}

// fdSlack is what the client and the server need beside the connections
// (listeners, epoll, timers, stdio, the Go runtime's own).
const fdSlack = 256

// Measure starts target with room for opts.Conns descriptors, records its
// RSS, opens the connections one at a time (each sends one 64-byte DATA
// frame and reads its echo, so every per-connection buffer a server keeps
// is touched), records the RSS again, then closes them and stops the
// target. It raises this process's descriptor limit to its hard limit if
// it needs to, and fails, naming the limit, where that is not enough. A
// target that cannot start (missing program, immediate exit, no listener
// within opts.StartTimeout) fails it with an error wrapping the
// *target.StartError; a target without a process of its own, with
// one wrapping conformance.ErrUnsupported. A connection that is not
// echoed fails it with the server's descriptor table (its count and
// RLIMIT_NOFILE); one that waits for its echo while that table is full
// fails it at once (stallGrace), naming the full table as the likely
// cause, rather than at opts.Timeout.
func Measure(ctx context.Context, target conformance.Target, opts Options) (Result, error) {
	if opts.Conns == 0 {
		opts.Conns = 10000
	}
	if opts.Conns < 1 || opts.Conns > 1_000_000 {
		return Result{}, fmt.Errorf("conns %d out of range 1..1000000", opts.Conns)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	limit := uint64(opts.Conns) + fdSlack
	if err := raiseFdLimit(limit); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := time.Now()
	res := Result{Target: target.Name(), Conns: opts.Conns}
	inst, err := conformance.StartInstance(ctx, target, conformance.Setup{FdLimit: limit}, opts.StartTimeout)
	if err != nil {
		return res, named(target.Name(), err)
	}
	defer inst.Stop()
	before, err := inst.Usage()
	if err != nil {
		return res, fmt.Errorf("measuring %s: %w", target.Name(), err)
	}
	if before.RSS < 0 {
		return res, fmt.Errorf("%s has no process of its own to measure (run it as a child process)", target.Name())
	}
	addr, err := netip.ParseAddrPort(inst.Addr())
	if err != nil {
		return res, fmt.Errorf("%s's address %q: %w", target.Name(), inst.Addr(), err)
	}
	server := serverFds{limit: limit}
	if g, ok := inst.(conformance.ProcessGroup); ok {
		server.group = g
		server.idle, _ = server.read()
	}
	fds := make([]int, 0, opts.Conns)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	frame := wire.AppendFrame(nil, wire.KindData, 0, 1, 0, 0, make([]byte, 64))
	echo := make([]byte, len(frame))
	deadline, _ := ctx.Deadline()
	for i := 0; i < opts.Conns; i++ {
		if ctx.Err() != nil {
			return res, fmt.Errorf("%d of %d connections open: %w", i, opts.Conns, context.Cause(ctx))
		}
		fd, err := dialEcho(addr, frame, echo, deadline, server.stalled)
		if err != nil {
			return res, fmt.Errorf("connection %d of %d to %s: %w", i+1, opts.Conns, addr, server.explain(err, i))
		}
		fds = append(fds, fd)
	}
	after, err := inst.Usage()
	if err != nil {
		return res, fmt.Errorf("measuring %s with %d connections: %w", target.Name(), opts.Conns, err)
	}
	res.Before, res.After, res.ServerFds = before.RSS, after.RSS, after.Fds
	res.PerConn = float64(after.RSS-before.RSS) / float64(opts.Conns)
	res.Elapsed = time.Since(start)
	if after.Fds >= 0 && after.Fds < opts.Conns {
		return res, fmt.Errorf("%s holds %d descriptors with %d connections echoed: it did not keep them open", target.Name(), after.Fds, opts.Conns)
	}
	return res, nil
}

// named is err with the target's name in front, unless it begins with it
// already (StartInstance's errors name the target).
func named(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+":") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// stallGrace is how long a connection waits for its echo before the
// server's descriptor table is read; stallEvery is how often it is read
// again while the connection still waits (and how long each poll of the
// connection lasts). An echo on loopback takes well under a millisecond.
const (
	stallGrace = time.Second
	stallEvery = 250 * time.Millisecond
)

// fdHeadroom is how few free descriptors make a server's table full: an
// accepted connection and what a server opens beside it (a splice pipe
// pair, an eventfd, a timerfd) take more than this, so a server with
// fewer left cannot take another connection.
const fdHeadroom = 8

// fdTable is a server process's descriptor table at one moment: how many
// descriptors it holds and its RLIMIT_NOFILE soft limit (-1: unlimited),
// from /proc/PID/fd and /proc/PID/limits.
type fdTable struct {
	Pid   int
	Open  int
	Limit int64
}

// full reports whether the table has fdHeadroom free descriptors or
// fewer.
func (t fdTable) full() bool { return t.Limit >= 0 && int64(t.Open)+fdHeadroom >= t.Limit }

func (t fdTable) String() string {
	limit := "unlimited"
	if t.Limit >= 0 {
		limit = figure.Count(t.Limit)
	}
	return fmt.Sprintf("pid %d holds %s, its limit (RLIMIT_NOFILE) %s", t.Pid, figure.Counted(t.Open, "descriptor", "descriptors"), limit)
}

// serverFds reads the descriptor tables of a server's processes while its
// connections are opened.
type serverFds struct {
	group conformance.ProcessGroup // nil: a target without processes of its own
	limit uint64                   // the limit Measure set for it
	idle  fdTable                  // its fullest table before the first connection
}

// read returns the fullest table among the server's processes (the one
// closest to its limit; among unlimited ones, the largest).
func (s serverFds) read() (fdTable, error) {
	if s.group == nil {
		return fdTable{}, errors.New("the target has no process of its own")
	}
	pids, err := s.group.Group()
	if err != nil {
		return fdTable{}, err
	}
	var best fdTable
	found := false
	for _, pid := range pids {
		open, err := procfs.CountFds(pid)
		if err != nil {
			continue // gone meanwhile
		}
		soft, _, err := procfs.ReadFdLimit(pid)
		if err != nil {
			continue
		}
		t := fdTable{Pid: pid, Open: open, Limit: soft}
		if !found || t.free() < best.free() {
			best, found = t, true
		}
	}
	if !found {
		return fdTable{}, fmt.Errorf("no descriptor table readable among the server's processes %v", pids)
	}
	return best, nil
}

// free is the table's free descriptors (MaxInt64 minus the count when
// unlimited, so that among unlimited tables the largest is the fullest).
func (t fdTable) free() int64 {
	if t.Limit < 0 {
		return math.MaxInt64 - int64(t.Open)
	}
	return t.Limit - int64(t.Open)
}

// errTableFull is what stalled returns: the server's descriptor table was
// full while a connection waited.
type errTableFull struct{ table fdTable }

func (e *errTableFull) Error() string {
	return "the server's descriptor table is full: " + e.table.String()
}

// stalled is dialEcho's check while a connection waits: an *errTableFull
// when the server's table is full, nil otherwise (and when it cannot be
// read: no echo alone names no cause).
func (s serverFds) stalled() error {
	t, err := s.read()
	if err != nil || !t.full() {
		return nil
	}
	return &errTableFull{t}
}

// explain adds to the error of the connection after echoed ones what the
// server's descriptor table says: with a full table, that it is the
// likely cause, how many descriptors each connection took and how many
// connections fit; otherwise the table as it is.
func (s serverFds) explain(err error, echoed int) error {
	var full *errTableFull
	if !errors.As(err, &full) {
		t, rerr := s.read()
		if rerr != nil {
			return fmt.Errorf("%w (the server's descriptor table: %v)", err, rerr)
		}
		if t.full() {
			return fmt.Errorf("%w; the server's descriptor table is full (%s): likely the cause", err, t)
		}
		return fmt.Errorf("%w (the server's descriptor table: %s)", err, t)
	}
	msg := fmt.Sprintf("%v: likely the cause; footprint sets the server's limit to --conns + %d = %s", err, fdSlack, figure.Count(int64(s.limit)))
	if t := full.table; echoed > 0 && s.idle.Pid == t.Pid && t.Open > s.idle.Open {
		per := float64(t.Open-s.idle.Open) / float64(echoed)
		msg += fmt.Sprintf(", and with %s echoed the server holds %d descriptors more than before the first, %.1f a connection",
			figure.Counted(echoed, "connection", "connections"), t.Open-s.idle.Open, per)
		// The limit grows with --conns by one a connection: c connections
		// fit while idle + per·c ≤ c + fdSlack.
		if per > 1 && s.idle.Open < fdSlack {
			msg += fmt.Sprintf(": at that rate the limit footprint sets fits about %s (--conns)",
				figure.Counted(int(float64(fdSlack-s.idle.Open)/(per-1)), "connection", "connections"))
		}
	}
	return &wrapped{msg: msg, err: err}
}

// wrapped is an error with its own message that still unwraps to err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// dialEcho connects a blocking socket, sends frame and reads its echo
// whole, by deadline. While it waits for the connection or the echo, it
// calls stalled every stallEvery from stallGrace on, and gives up with
// stalled's error if it returns one.
func dialEcho(addr netip.AddrPort, frame, echo []byte, deadline time.Time, stalled func() error) (int, error) {
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return -1, context.DeadlineExceeded
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("setsockopt: %w", err)
		}
	}
	began := time.Now()
	sa := &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	if err := connect(fd, sa, began, deadline, stalled); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect: %w", err)
	}
	for sent := 0; sent < len(frame); {
		n, err := unix.Write(fd, frame[sent:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("write: %w", err)
		}
		sent += n
	}
	for got := 0; got < len(echo); {
		if err := await(fd, unix.POLLIN, began, deadline, stalled); err != nil {
			unix.Close(fd)
			if errors.Is(err, errDeadline) {
				return -1, fmt.Errorf("no echo within %v (%d of %d bytes)", timeout.Round(time.Millisecond), got, len(echo))
			}
			return -1, fmt.Errorf("no echo after %v (%d of %d bytes): %w", time.Since(began).Round(time.Millisecond), got, len(echo), err)
		}
		n, err := unix.Read(fd, echo[got:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			unix.Close(fd)
			return -1, fmt.Errorf("no echo within %v (%d of %d bytes)", timeout.Round(time.Millisecond), got, len(echo))
		case err != nil:
			unix.Close(fd)
			return -1, fmt.Errorf("read: %w", err)
		case n == 0:
			unix.Close(fd)
			return -1, fmt.Errorf("closed by the server after %d of %d echo bytes", got, len(echo))
		}
		got += n
	}
	if string(echo) != string(frame) {
		unix.Close(fd)
		return -1, errors.New("the echo differs from the frame sent")
	}
	return fd, nil
}

// errDeadline is await's error when the deadline passed first.
var errDeadline = errors.New("deadline passed")

// await polls fd for events until it is ready (nil), the deadline passes
// (errDeadline) or stalled, called every stallEvery once stallGrace has
// passed since began, returns an error (that error).
func await(fd int, events int16, began, deadline time.Time, stalled func() error) error {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errDeadline
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd, int(min(left, stallEvery).Milliseconds())+1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("poll: %w", err)
		case n > 0:
			return nil
		}
		if stalled != nil && time.Since(began) >= stallGrace {
			if err := stalled(); err != nil {
				return err
			}
		}
	}
}

// connect connects the blocking socket fd by deadline. The Go runtime's
// preemption signals interrupt a blocking connect(2), which then goes on
// in the background: it is waited for with await (stalled as dialEcho's)
// and its result read from SO_ERROR.
func connect(fd int, sa unix.Sockaddr, began, deadline time.Time, stalled func() error) error {
	err := unix.Connect(fd, sa)
	if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EINPROGRESS) {
		return err
	}
	if err := await(fd, unix.POLLOUT, began, deadline, stalled); err != nil {
		if errors.Is(err, errDeadline) {
			return fmt.Errorf("not connected within %v", deadline.Sub(began).Round(time.Millisecond))
		}
		return fmt.Errorf("not connected after %v: %w", time.Since(began).Round(time.Millisecond), err)
	}
	soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return fmt.Errorf("SO_ERROR: %w", err)
	}
	if soerr != 0 {
		return unix.Errno(soerr)
	}
	return nil
}

// ErrFdLimit reports that this process may not open the descriptors a
// measurement needs: its hard RLIMIT_NOFILE is below them and it may not
// raise it. Nothing was started.
var ErrFdLimit = errors.New("descriptor limit too low")

// raiseFdLimit makes sure this process may open need descriptors, raising
// its soft limit up to the hard one, and the hard one too where it may
// (CAP_SYS_RESOURCE, up to fs.nr_open); otherwise it fails with an error
// wrapping ErrFdLimit.
func raiseFdLimit(need uint64) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		raised := unix.Rlimit{Cur: need, Max: need}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
			return fmt.Errorf("%w: RLIMIT_NOFILE hard limit %d is below the %d descriptors %d connections need, and raising it failed (%v): raise ulimit -Hn, or ask for fewer --conns", ErrFdLimit, lim.Max, need, need-fdSlack, err)
		}
		return nil
	}
	lim.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", lim.Max, err)
	}
	return nil
}
