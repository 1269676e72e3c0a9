//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/internal/inetdiag"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// pipeDrain bounds how long Stop waits, once the process is reaped, for its
// stdout and stderr to reach end of file. They stay open while a process that
// escaped the group holds them; after this the read ends are closed.
const pipeDrain = 2 * time.Second

// A Process is one started target. Its methods are safe for concurrent use.
type Process struct {
	name  string // argv[0], for errors
	addr  string
	grace time.Duration
	cmd   *exec.Cmd
	pid   int
	start time.Time

	stdout  capped
	outTail tail           // the end of stdout
	stderr  tail           // the end of stderr
	errHead capped         // the start of stderr
	pipes   [2]*os.File    // read ends of stdout and stderr
	copies  atomic.Int32   // pipe copiers still running
	copied  chan struct{}  // closed when both copiers have finished
	wg      sync.WaitGroup // the reaper and the two copiers
	done    chan struct{}  // closed once the process is reaped

	// mu orders signals, prlimit and /proc reads before the reap, so none
	// of them can reach another process that reuses the pid.
	mu       sync.Mutex
	reaped   bool
	sentKill bool
	state    *os.ProcessState
	exitedAt time.Time

	// members are the group's processes when it became ready: a target
	// is whole while they all live (Departed).
	members  []member
	preReady []member // the group before the last dial of waitReady's first address

	stopOnce sync.Once
	exit     Exit
	stopErr  error

	// term is the caller's own SIGTERM (Terminate), once sent.
	termOnce sync.Once
	term     *termination
}

// termination is what Terminate recorded when it sent SIGTERM: the moment,
// who had departed by then and whether the leader had exited.
type termination struct {
	at       time.Time
	departed []Departure
	before   bool
}

// Start starts the command and returns once every address (Spec.Addr, then
// Spec.WaitAddrs) accepts a TCP connection; each probe connection is closed
// at once. It returns an error instead if the process exits first (with its
// exit status and the tail of its stderr), if Spec.Ready passes, or if ctx
// ends; the process is then killed and reaped before Start returns, and the
// error is a *StartError. ctx bounds only Start: use Stop to end the
// process.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("start: empty Argv")
	}
	name := spec.Argv[0]
	fail := func(err error) (*Process, error) { return nil, fmt.Errorf("start %s: %w", name, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	pl, err := planStart(spec)
	if err != nil {
		return fail(err)
	}
	// Unless it inherits the caller's thread, the child is forked, and
	// later reaped, by a goroutine locked to its OS thread throughout: the
	// kernel sends a child its Pdeathsig when the thread that forked it
	// exits, not the process, and the Go runtime ends threads (one whose
	// goroutine returns locked to it, as a reference reactor's loop does
	// when it stops in the same process). Locked, the thread outlives the
	// child; its wait for the child's exit is the reap.
	type started struct {
		cmd        *exec.Cmd
		outR, errR *os.File
		err        error
	}
	startedc, reaper := make(chan started, 1), make(chan *Process, 1)
	if spec.InheritThread {
		cmd, outR, errR, err := startCommand(spec, pl)
		startedc <- started{cmd, outR, errR, err}
		go func() {
			if p := <-reaper; p != nil {
				p.reap()
			}
		}()
	} else {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cmd, outR, errR, err := startCommand(spec, pl)
			startedc <- started{cmd, outR, errR, err}
			if p := <-reaper; p != nil {
				p.reap()
			}
		}()
	}
	st := <-startedc
	if st.err != nil {
		reaper <- nil
		return fail(st.err)
	}
	cmd, outR, errR := st.cmd, st.outR, st.errR
	p := &Process{
		name:    name,
		addr:    pl.addr,
		grace:   pl.grace,
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		start:   time.Now(),
		stdout:  capped{max: MaxStdout},
		outTail: tail{max: StdoutTailSize},
		stderr:  tail{max: StderrTailSize},
		errHead: capped{max: StderrTailSize},
		pipes:   [2]*os.File{outR, errR},
		copied:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.copies.Store(2)
	p.wg.Add(3)
	go p.copy(outR, io.MultiWriter(&p.stdout, &p.outTail))
	go p.copy(errR, io.MultiWriter(&p.errHead, &p.stderr))
	reaper <- p

	if err := p.waitReady(ctx, pl.ready, pl.waitAddrs); err != nil {
		// Read while the group still lives: where it listens, if not
		// where it was told.
		var listening []string
		if !errors.Is(err, ErrExited) && !errors.Is(err, ErrAddrTaken) {
			listening = p.listeningElsewhere(pl.given)
		}
		exit, _ := p.terminate(0, false)
		if errors.Is(err, ErrExited) {
			err = fmt.Errorf("%w (%s) before %s accepted", ErrExited, exit, strings.Join(pl.waitAddrs, " and "))
		}
		return nil, &StartError{Name: name, Addrs: pl.waitAddrs, Listening: listening, Exit: exit, Err: err}
	}
	// The group as it was before the dial that found the target ready: a
	// server that forks a child per connection has forked one for that
	// probe, which exits with it, and is no member.
	p.members = intersectMembers(p.preReady, snapshotGroup(p.pid))
	return p, nil
}

// startPlan is what Start makes of a Spec: the address (chosen if the
// spec has none and listens), the bounds with their defaults, and the
// argv and environment with the address filled in, the addresses to
// wait for, and every address the target is given: those waited for and
// any offered in Spec.Env (ListenEnv, ControlListenEnv) without a wait.
type startPlan struct {
	addr                        string
	ready, grace                time.Duration
	argv, env, waitAddrs, given []string
}

// planStart is spec's startPlan.
func planStart(spec Spec) (startPlan, error) {
	addr := spec.Addr
	switch {
	case spec.NoListen && (addr != "" || spec.ControlAddr != ""):
		return startPlan{}, ErrNoListenAddr
	case addr == "" && !spec.NoListen:
		var err error
		if addr, err = FreeAddr(); err != nil {
			return startPlan{}, err
		}
	}
	pl := startPlan{addr: addr, ready: spec.Ready, grace: spec.Grace}
	if pl.ready <= 0 {
		pl.ready = DefaultReady
	}
	if pl.grace <= 0 {
		pl.grace = DefaultGrace
	}
	pl.argv = make([]string, len(spec.Argv))
	for i, a := range spec.Argv {
		pl.argv[i] = a
		if !spec.NoListen {
			pl.argv[i] = strings.ReplaceAll(a, AddrPlaceholder, addr)
		}
		if spec.ControlAddr != "" {
			pl.argv[i] = strings.ReplaceAll(pl.argv[i], ControlPlaceholder, spec.ControlAddr)
		}
	}
	pl.env = append(os.Environ(), spec.Env...)
	if !spec.NoListen {
		pl.env = append(pl.env, ListenEnv+"="+addr)
	}
	if spec.ControlAddr != "" {
		pl.env = append(pl.env, ControlListenEnv+"="+spec.ControlAddr)
	}
	pl.waitAddrs = spec.WaitAddrs
	if !spec.NoListen {
		first := []string{addr}
		if spec.ControlAddr != "" {
			first = append(first, spec.ControlAddr)
		}
		pl.waitAddrs = append(first, spec.WaitAddrs...)
	}
	pl.given = append([]string(nil), pl.waitAddrs...)
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == ListenEnv || k == ControlListenEnv {
			pl.given = append(pl.given, v)
		}
	}
	return pl, nil
}

// startCommand starts pl's command through the launcher in a process group of
// its own, its stdout and stderr on pipes whose read ends it returns. On
// an error nothing is left open.
func startCommand(spec Spec, pl startPlan) (cmd *exec.Cmd, outR, errR *os.File, err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	// The launcher (launch_linux.go) sets the fd limit and closes inherited
	// descriptors between fork and the target's exec, then execs it.
	largv := launcherArgv("/proc/self/exe", spec.FdLimit, pl.argv)
	cmd = exec.Command(largv[0], largv[1:]...)
	cmd.Args[0] = pl.argv[0]
	cmd.Env = append(pl.env, launcherEnv+"="+launcherToken)
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = outW, errW // *os.File: handed to the child as is, no copying goroutine in exec
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	outW.Close() // the child has its copies; EOF comes when it (and its group) closes them
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, nil, nil, err
	}
	return cmd, outR, errR, nil
}

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Addr is the address the target was told to listen on ("" with NoListen).
func (p *Process) Addr() string { return p.addr }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// StderrTail returns the last StderrTailSize bytes of stderr so far.
func (p *Process) StderrTail() string { return p.stderr.String() }

// StdoutTail returns the last StdoutTailSize bytes of stdout so far.
func (p *Process) StdoutTail() string { return p.outTail.String() }

// Stop sends SIGTERM to the process group, waits up to Spec.Grace for the
// process to exit, then sends SIGKILL; it reaps the process, waits (boundedly)
// for its output to end, and returns how it exited. The error reports a
// failure to signal, not the target's exit status, which is in Exit. Stop is
// idempotent: later calls return the same Exit. It is safe after the process
// has exited by itself.
//
// After Terminate, Stop sends no second SIGTERM: it waits what is left of
// Spec.Grace, counted from Terminate, then sends SIGKILL, and Exit's
// Departed and ExitedBeforeStop are as Terminate recorded them.
func (p *Process) Stop() (Exit, error) {
	p.stopOnce.Do(func() {
		var term *termination
		p.termOnce.Do(func() {}) // no Terminate from now on
		p.mu.Lock()
		term = p.term
		p.mu.Unlock()
		if term != nil {
			p.exit, p.stopErr = p.terminate(max(p.grace-time.Since(term.at), 0), false)
			p.exit.Departed, p.exit.ExitedBeforeStop = term.departed, term.before
			return
		}
		// Who had left before the signal: after it, leaving is the answer.
		departed, before := p.Departed(), p.leaderExited()
		p.exit, p.stopErr = p.terminate(p.grace, true)
		p.exit.Departed, p.exit.ExitedBeforeStop = departed, before
	})
	return p.exit, p.stopErr
}

// Terminate sends SIGTERM to the process group now and returns at once,
// for a caller that watches how the target answers the signal (its
// connections, its listener) before it calls Stop. Who had departed and
// whether the leader had exited are recorded as of this moment, so that
// an exit in answer to the signal is not reported as one before the stop.
// Only the first call signals; after Stop, or once the process has been
// reaped, it does nothing.
func (p *Process) Terminate() error {
	var err error
	p.termOnce.Do(func() {
		t := &termination{at: time.Now(), departed: p.Departed(), before: p.leaderExited()}
		p.mu.Lock()
		p.term = t
		p.mu.Unlock()
		err = p.signal(unix.SIGTERM)
	})
	return err
}

// leaderExited reports whether the leader has exited: reaped, or a zombie
// not reaped yet.
func (p *Process) leaderExited() bool {
	select {
	case <-p.done:
		return true
	default:
	}
	st, err := procfs.ReadStat(p.pid)
	return err == nil && st.State == "Z"
}

// terminate ends the process: SIGTERM (if sendTerm) and up to grace, then
// SIGKILL (at once if grace is 0). When it returns, no goroutine of p is
// left.
func (p *Process) terminate(grace time.Duration, sendTerm bool) (Exit, error) {
	var errs []error
	if grace > 0 {
		if sendTerm {
			if err := p.signal(unix.SIGTERM); err != nil {
				errs = append(errs, err)
			}
		}
		t := time.NewTimer(grace)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
	}
	select {
	case <-p.done:
	default:
		if err := p.signal(unix.SIGKILL); err != nil {
			errs = append(errs, err)
		}
		<-p.done // SIGKILL cannot be caught: the reap follows
	}
	t := time.NewTimer(pipeDrain)
	select {
	case <-p.copied:
	case <-t.C:
		p.pipes[0].Close() // unblocks the copiers' reads
		p.pipes[1].Close()
	}
	t.Stop()
	p.wg.Wait()

	out, truncated := p.stdout.bytes()
	head, _ := p.errHead.bytes()
	p.mu.Lock()
	defer p.mu.Unlock()
	e := Exit{
		Code:            p.state.ExitCode(),
		Stdout:          out,
		StdoutTruncated: truncated,
		StdoutTail:      p.outTail.String(),
		StderrTail:      p.stderr.String(),
		StderrHead:      string(head),
		Elapsed:         p.exitedAt.Sub(p.start),
	}
	if ru, ok := p.state.SysUsage().(*syscall.Rusage); ok && ru != nil {
		e.UserNs = ru.Utime.Nano()
		e.SysNs = ru.Stime.Nano()
		e.MaxRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal().String()
		e.Killed = p.sentKill && ws.Signal() == syscall.SIGKILL
	}
	if err := errors.Join(errs...); err != nil {
		return e, fmt.Errorf("stop %s (pid %d): %w", p.name, p.pid, err)
	}
	return e, nil
}

// signal sends sig to the process group and, if the leader has left its
// group, to the leader too. It does nothing once the process is reaped.
func (p *Process) signal(sig unix.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil
	}
	if sig == unix.SIGKILL {
		p.sentKill = true
	}
	err := unix.Kill(-p.pid, sig)
	if pg, gerr := unix.Getpgid(p.pid); gerr == nil && pg != p.pid {
		err = unix.Kill(p.pid, sig)
	}
	if err != nil && err != unix.ESRCH { // ESRCH: exited, not yet reaped
		return os.NewSyscallError("kill "+sig.String(), err)
	}
	return nil
}

// reap waits for the process to exit and reaps it. Between the two, while
// the leader is a zombie and its pid (so its group id) cannot be reused, it
// kills what is left of the group.
func (p *Process) reap() {
	defer p.wg.Done()
	var info unix.Siginfo
	var err error
	for {
		err = unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	exitedAt := time.Now()
	p.mu.Lock()
	if err == nil {
		_ = unix.Kill(-p.pid, unix.SIGKILL) // ESRCH when the group has no one else
	}
	_ = p.cmd.Wait() // an *exec.ExitError for a non-zero exit: the state says it all
	p.state = p.cmd.ProcessState
	p.exitedAt = exitedAt
	p.reaped = true
	p.mu.Unlock()
	close(p.done)
}

// copy drains one of the child's output pipes into w.
func (p *Process) copy(r *os.File, w io.Writer) {
	defer p.wg.Done()
	_, _ = io.Copy(w, r) // ends at EOF, or with ErrClosed when terminate gives up waiting
	r.Close()
	if p.copies.Add(-1) == 0 {
		close(p.copied)
	}
}

// waitReady dials each address in turn until it accepts, retrying with a
// short backoff. It returns ErrExited as soon as the process exits, even in
// the middle of a dial, and ErrAddrTaken when an address accepts on a
// listener the kernel shows held by no process of the target's group.
func (p *Process) waitReady(ctx context.Context, ready time.Duration, addrs []string) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, ready)
	var watch sync.WaitGroup
	watch.Add(1)
	go func() { // cut a dial short when the process exits
		defer watch.Done()
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer watch.Wait()
	defer cancel() // runs first: ends the watcher

	var d net.Dialer
	backoff := time.Millisecond
	for i, addr := range addrs {
		for {
			if i == 0 {
				p.preReady = snapshotGroup(p.pid)
			}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
				if p.listenerElsewhere(addr) {
					return fmt.Errorf("%w: %s accepts, but no process of the target's group holds a socket listening on it", ErrAddrTaken, addr)
				}
				break
			}
			t := time.NewTimer(backoff)
			select {
			case <-p.done:
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			select {
			case <-p.done:
				return ErrExited
			default:
			}
			if perr := parent.Err(); perr != nil {
				return fmt.Errorf("waiting for %s: %w", addr, perr)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %s not accepting after %v (last: %v): %w",
					ErrNotReady, addr, ready, err, context.DeadlineExceeded)
			}
			backoff = min(2*backoff, 50*time.Millisecond)
		}
	}
	return nil
}

// listenerElsewhere reports whether addr's port is, on positive evidence,
// held by a process outside the target's group: the kernel's TCP tables
// (inet_diag, in the calling thread's network namespace, the one the dial
// went out in) show sockets listening on the port, and no descriptor of
// the group's processes refers to any of them. A dial that was accepted
// then reached another process, which bound the port before the target
// could. It is false whenever that cannot be read (the tables, the group,
// a descriptor table this process may not read): the accepted dial alone
// is then the evidence of readiness.
func (p *Process) listenerElsewhere(addr string) bool {
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return false
	}
	listeners, err := inetdiag.ListeningInodes(uint16(port))
	if err != nil {
		return false
	}
	group, err := groupPids(p.pid)
	if err != nil || len(group) == 0 {
		return false
	}
	for _, pid := range group {
		fds, err := procfs.ReadFds(pid)
		if err != nil {
			return false
		}
		for _, f := range fds {
			if ino, ok := f.SocketInode(); ok && listeners[ino] {
				return false
			}
		}
	}
	return true
}

// listeningElsewhere lists the local addresses of the TCP sockets the
// target's group holds listening (the kernel's TCP tables, read in the
// calling thread's network namespace, the one the dials went out in,
// matched by inode to the descriptors of the group's processes) that
// serve none of addrs (the addresses it was given), sorted: a target that was told one address and
// listens on another. A listener serves an address when their ports are
// equal and its own address is the same or unspecified (0.0.0.0, [::]).
// It is empty when nothing of the kind can be read.
func (p *Process) listeningElsewhere(addrs []string) []string {
	listeners, err := inetdiag.Listeners()
	if err != nil || len(listeners) == 0 {
		return nil
	}
	byInode := map[uint64]netip.AddrPort{}
	for _, s := range listeners {
		if s.Inode != 0 {
			byInode[uint64(s.Inode)] = s.Local
		}
	}
	group, err := groupPids(p.pid)
	if err != nil {
		return nil
	}
	var given []netip.AddrPort
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			given = append(given, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
	}
	serves := func(l netip.AddrPort) bool {
		for _, g := range given {
			if l.Port() == g.Port() && (l.Addr() == g.Addr() || l.Addr().IsUnspecified()) {
				return true
			}
		}
		return false
	}
	seen := map[netip.AddrPort]bool{}
	var out []string
	for _, pid := range group {
		fds, err := procfs.ReadFds(pid)
		if err != nil {
			continue // exited meanwhile, or not readable: the others may still say
		}
		for _, f := range fds {
			ino, ok := f.SocketInode()
			if !ok {
				continue
			}
			if l, ok := byInode[ino]; ok && !seen[l] && !serves(l) {
				seen[l] = true
				out = append(out, l.String())
			}
		}
	}
	sort.Strings(out)
	return out
}
