//go:build linux

package footprint

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/conformance"
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
// one wrapping conformance.ErrUnsupported.
func Measure(ctx context.Context, target conformance.Target, opts Options) (Result, error) {
	if opts.Conns == 0 {
		opts.Conns = 10000
	}
	if opts.Conns < 1 || opts.Conns > 1_000_000 {
		return Result{}, fmt.Errorf("footprint: conns %d out of range 1..1000000", opts.Conns)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if err := raiseFdLimit(uint64(opts.Conns) + fdSlack); err != nil {
		return Result{}, fmt.Errorf("footprint: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := time.Now()
	res := Result{Target: target.Name(), Conns: opts.Conns}
	inst, err := conformance.StartInstance(ctx, target, conformance.Setup{FdLimit: uint64(opts.Conns) + fdSlack}, opts.StartTimeout)
	if err != nil {
		return res, fmt.Errorf("footprint: starting %s: %w", target.Name(), err)
	}
	defer inst.Stop()
	before, err := inst.Usage()
	if err != nil {
		return res, fmt.Errorf("footprint: measuring %s: %w", target.Name(), err)
	}
	if before.RSS < 0 {
		return res, fmt.Errorf("footprint: %s has no process of its own to measure (run it as a child process)", target.Name())
	}
	addr, err := netip.ParseAddrPort(inst.Addr())
	if err != nil {
		return res, fmt.Errorf("footprint: %s's address %q: %w", target.Name(), inst.Addr(), err)
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
			return res, fmt.Errorf("footprint: %d of %d connections open: %w", i, opts.Conns, context.Cause(ctx))
		}
		fd, err := dialEcho(addr, frame, echo, time.Until(deadline))
		if err != nil {
			return res, fmt.Errorf("footprint: connection %d of %d to %s: %w", i+1, opts.Conns, addr, err)
		}
		fds = append(fds, fd)
	}
	after, err := inst.Usage()
	if err != nil {
		return res, fmt.Errorf("footprint: measuring %s with %d connections: %w", target.Name(), opts.Conns, err)
	}
	res.Before, res.After, res.ServerFds = before.RSS, after.RSS, after.Fds
	res.PerConn = float64(after.RSS-before.RSS) / float64(opts.Conns)
	res.Elapsed = time.Since(start)
	if after.Fds >= 0 && after.Fds < opts.Conns {
		return res, fmt.Errorf("footprint: %s holds %d descriptors with %d connections echoed: it did not keep them open", target.Name(), after.Fds, opts.Conns)
	}
	return res, nil
}

// dialEcho connects a blocking socket, sends frame and reads its echo
// whole, within timeout.
func dialEcho(addr netip.AddrPort, frame, echo []byte, timeout time.Duration) (int, error) {
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
	sa := &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	if err := connect(fd, sa, timeout); err != nil {
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
		n, err := unix.Read(fd, echo[got:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			unix.Close(fd)
			return -1, fmt.Errorf("no echo within %v (%d of %d bytes)", timeout, got, len(echo))
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

// connect connects the blocking socket fd. The Go runtime's preemption
// signals interrupt a blocking connect(2), which then goes on in the
// background: it is waited for with poll and its result read from
// SO_ERROR.
func connect(fd int, sa unix.Sockaddr, timeout time.Duration) error {
	err := unix.Connect(fd, sa)
	if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EINPROGRESS) {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("not connected within %v", timeout)
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(pfd, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if n == 0 {
			continue
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
