// Package proc starts, measures and stops one target process: a black-box
// server command or a reference reactor child (reactorlab serve ...).
//
// The target contract (docs/ARCHITECTURE.md, "Harness"): the command gets
// REACTORLAB_LISTEN=host:port in its environment and every "{addr}" in its
// arguments replaced by that address (and, given a Spec.ControlAddr,
// REACTORLAB_CONTROL_LISTEN and "{control}" the same way); Start returns
// once the addresses (and any Spec.WaitAddrs) accept a TCP connection;
// Stop ends it (Terminate sends the SIGTERM alone, for a caller that
// watches the answer).
//
// # Process lifetime
//
// The child runs in its own process group (Setpgid) with a parent-death
// signal of SIGKILL. Stop signals the whole group: SIGTERM, then SIGKILL
// after Spec.Grace. When the group leader exits, by itself or by a signal,
// the rest of its group is killed before the leader is reaped, so a shell
// wrapper or `go run` leaves no process behind. A process that moves itself
// into another group or session escapes this, as it would escape any
// group-wide signal.
//
// The parent-death signal fires when the OS thread that started the child
// exits, not only when this process does (prctl(2), PR_SET_PDEATHSIG). Go
// ends a thread only when a goroutine locked to it (runtime.LockOSThread)
// returns without unlocking; do not call Start from such a goroutine, for
// example one that entered a namespace and is about to be discarded.
//
// No signal is sent and no /proc file is read once the process has been
// reaped, so a reused pid is never touched.
//
// # Launch
//
// Start does not exec the target itself: it re-executes the running binary
// as a launcher (launch_linux.go; this package's init recognises it) that
// sets Spec.FdLimit and marks every descriptor above 2 close-on-exec
// between fork and the target's exec, so the target starts with its limit
// and descriptors 0, 1 and 2 only, and a wrapper shell cannot fork the
// server before a limit lands. The package inits that run before this
// one's (those it depends on, and others whose import paths sort first)
// also run in the launcher; keep them free of side effects outside the
// process.
//
// The processes of the target's group that lived before the dial that
// found it ready are its members: Exit.Departed lists those that exited
// before Stop, and Exit.ExitedBeforeStop says the leader did. A child
// forked for a connection (the readiness probe's included) is no member.
//
// # Measurement
//
// Usage reads /proc/<pid>/stat, /proc/<pid>/status and /proc/<pid>/fd. CPU
// time from stat is kept in clock ticks of 1/100 s (USER_HZ, which is 100 on
// every Linux architecture Go supports; Go cannot call sysconf(_SC_CLK_TCK),
// and a test checks the constant against `getconf CLK_TCK`), so it moves in
// steps of 10 ms. ThreadCPU sums /proc/<pid>/task/*/schedstat instead, in
// nanoseconds, for short measurement windows. Both measure the group
// leader; GroupUsage and GroupSchedstat sum over the living processes of
// the group, for a server started through a wrapper (a shell, `go run`).
// ReadUsage and ReadThreadCPU measure any pid, this process included.
//
// # CPU cap
//
// Process.LimitCPU caps a started target's CPU time, its whole process
// group's, with a cgroup of its own and a CFS bandwidth quota (cgroup v2
// cpu.max, or v1 cpu.cfs_quota_us); the caller releases it once the target
// has been reaped. CheckCPULimit says whether that can work here.
package proc

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/target"
)

// ListenEnv is the environment variable that carries the target's address.
const ListenEnv = "REACTORLAB_LISTEN"

// AddrPlaceholder is replaced by the target's address in every argument.
const AddrPlaceholder = "{addr}"

// ControlListenEnv is the environment variable that carries the target's
// control address, when it is given one (Spec.ControlAddr).
const ControlListenEnv = "REACTORLAB_CONTROL_LISTEN"

// ControlPlaceholder is replaced by Spec.ControlAddr in every argument.
const ControlPlaceholder = "{control}"

// Defaults for the zero values of Spec.Ready and Spec.Grace, and the capture
// limits.
const (
	DefaultReady = 10 * time.Second
	DefaultGrace = 5 * time.Second

	// MaxStdout is how much of the target's stdout Exit.Stdout keeps; the
	// rest is read and dropped, so the target never blocks on a full pipe.
	MaxStdout = 16 << 20
	// StderrTailSize is how much of the end of the target's stderr is kept.
	StderrTailSize = 4 << 10
	// StdoutTailSize is how much of the end of the target's stdout is
	// kept besides Exit.Stdout's beginning: where a server that says
	// where it listens says it last.
	StdoutTailSize = 4 << 10
)

// ErrExited reports that the process has exited: before it was ready (from
// Start), or before a measurement (from Usage and ThreadCPU).
var ErrExited = errors.New("process exited")

// ErrNotReady reports that an address did not accept a connection within
// Spec.Ready; the error from Start wraps it and context.DeadlineExceeded.
var ErrNotReady = errors.New("target not ready")

// ErrAddrTaken reports that an address accepted a connection on a
// listener held by another process, not by any of the target's group:
// someone took the port before the target could bind it. That is the
// environment's doing; a caller that chose the address may choose another.
var ErrAddrTaken = errors.New("address taken by another process")

// StartError is Start's error for a process that was started but never
// became ready: it exited first (Err wraps ErrExited), an address did not
// accept within Spec.Ready (Err wraps ErrNotReady and
// context.DeadlineExceeded), an address was held by another process (Err
// wraps ErrAddrTaken), or Start's context ended (Err wraps its
// error). When Start returns it, the process and every process of its
// group have been killed and reaped: Exit says how the process ended and
// holds what it printed, its stdout and stderr tails included. Its text is
// the underlying error followed by where the group listened instead, if
// anywhere, and the stderr tail, so a person sees why.
type StartError struct {
	// Name is the command's Argv[0].
	Name string
	// Addrs are the addresses Start waited for, in order.
	Addrs []string
	// Listening are the addresses the target's group held listening
	// sockets on when the wait for Addrs ended unanswered (Err wraps
	// ErrNotReady or the context's error), none of them serving an
	// address of Addrs: the target listens, but not where it was told.
	// Empty when it listened nowhere, when that could not be read (the
	// kernel's tables, a descriptor table), and for any other Err.
	Listening []string
	// Exit is how the process ended: by itself (Err wraps ErrExited), or
	// killed by Start.
	Exit Exit
	// Err is what went wrong.
	Err error
}

// Error is "start NAME: ERR", then "; it listens on ADDRS" when
// Listening has any, then "; stderr:" and the stderr tail, if the process
// wrote any.
func (e *StartError) Error() string {
	msg := "start " + e.Name + ": " + e.Err.Error()
	if len(e.Listening) > 0 {
		msg += "; it listens on " + strings.Join(e.Listening, " and ")
	}
	if t := strings.TrimSpace(e.Exit.StderrTail); t != "" {
		msg += "; stderr:\n" + t
	}
	return msg
}

// Unwrap returns Err.
func (e *StartError) Unwrap() error { return e.Err }

// Cause classifies the failure: target.StartMissing or
// target.StartExited when the process exited first (by its status),
// target.StartElsewhere when an address did not accept within Spec.Ready
// while the group listened on others (Listening), target.StartNoListener
// when an address did not accept within Spec.Ready and the group
// listened nowhere else, target.StartAddrTaken when another process held
// one, and "" when Start's context ended first: not the process's
// failure but the caller's bound, which the caller judges.
func (e *StartError) Cause() target.StartCause {
	switch {
	case errors.Is(e.Err, ErrExited) && (e.Exit.Code == 127 || e.Exit.Code == 126):
		return target.StartMissing
	case errors.Is(e.Err, ErrExited):
		return target.StartExited
	case errors.Is(e.Err, ErrNotReady) && len(e.Listening) > 0:
		return target.StartElsewhere
	case errors.Is(e.Err, ErrNotReady):
		return target.StartNoListener
	case errors.Is(e.Err, ErrAddrTaken):
		return target.StartAddrTaken
	}
	return ""
}

// StartFailure is e as the start failure of the target named name (its
// Spec.String), whose addresses were waited for ready: Cause's cause, the
// exit (text and code) for target.StartMissing and target.StartExited,
// code -1 and the wait for target.StartNoListener and
// target.StartElsewhere, code -1 for target.StartAddrTaken, the
// addresses, where the group listened instead (Listening), and the whole
// stdout and stderr tails Exit kept, trimmed. When Cause is "" (Start's
// context ended) so is its Cause, and Detail is Err's text: the caller
// judges that, and names its cause. Err is left nil: the failure stands
// for e, which the caller holds.
func (e *StartError) StartFailure(name string, ready time.Duration) *target.StartError {
	f := &target.StartError{Target: name, Cause: e.Cause(), Addrs: e.Addrs, Listening: e.Listening, Code: e.Exit.Code,
		StderrTail: strings.TrimSpace(e.Exit.StderrTail), StdoutTail: strings.TrimSpace(e.Exit.StdoutTail)}
	switch f.Cause {
	case target.StartMissing, target.StartExited:
		f.Exit = e.Exit.String()
	case target.StartNoListener, target.StartElsewhere:
		f.Code, f.Timeout = -1, ready
	case target.StartAddrTaken:
		f.Code = -1
	default:
		f.Detail = e.Err.Error()
	}
	return f
}

// ErrNoListenAddr reports a Spec with NoListen and an Addr or a
// ControlAddr.
var ErrNoListenAddr = errors.New("NoListen with an Addr or a ControlAddr")

// ErrNoSchedstat reports that the kernel has no per-task schedstat file
// (built without CONFIG_SCHED_INFO), so ThreadCPU cannot measure.
var ErrNoSchedstat = errors.New("no /proc/<pid>/task/<tid>/schedstat on this kernel")

// Spec describes one target process.
type Spec struct {
	// Argv is the command and its arguments; every "{addr}" substring is
	// replaced by Addr.
	Argv []string
	// Env is extra environment ("K=V"), added to the parent's;
	// REACTORLAB_LISTEN=Addr is always added, last, so it wins.
	Env []string
	// Addr is the host:port the target must listen on; "" picks a free
	// 127.0.0.1 port (FreeAddr).
	Addr string
	// ControlAddr, when set, is a second address the target is to serve:
	// every "{control}" in Argv is replaced by it,
	// REACTORLAB_CONTROL_LISTEN=ControlAddr is added to the environment
	// (after Env, so it wins), and Start waits for it to accept, after Addr
	// and before WaitAddrs. "" leaves "{control}" as it is and sets no
	// variable.
	ControlAddr string
	// WaitAddrs are further addresses that must accept TCP before Start
	// returns (for example a reference reactor's control address).
	WaitAddrs []string
	// Ready bounds the wait for the addresses to accept (0: DefaultReady).
	Ready time.Duration
	// Grace is how long Stop waits after SIGTERM before SIGKILL
	// (0: DefaultGrace).
	Grace time.Duration
	// FdLimit, when > 0, is the child's RLIMIT_NOFILE, soft and hard, set
	// between fork and exec (by the launcher, launch_linux.go), so the target
	// and everything it forks have it from their first instruction. Both are
	// set because a Go program raises its soft limit to the hard one when it
	// starts.
	FdLimit uint64
	// InheritThread forks the child from the calling thread, so that it
	// inherits what the caller set on that thread (its network namespace,
	// its CPU affinity). The kernel kills the child (its Pdeathsig) when
	// the thread that forked it exits, and the Go runtime ends a thread
	// whose goroutine returns locked to it: such a caller keeps the thread
	// until the process is reaped. Otherwise the child is forked from a
	// thread of Start's own, held until the reap.
	InheritThread bool
	// Dir is the working directory ("" inherits).
	Dir string
	// NoListen marks a process that is not a server, such as a load
	// generator: Start picks no address, sets no REACTORLAB_LISTEN, replaces
	// no "{addr}", and returns as soon as the process has started (after
	// WaitAddrs, if any, accept). Addr must then be "".
	NoListen bool
}

// Usage is one sample of a process's resource use.
type Usage struct {
	UserNs, SysNs int64 // CPU time of all threads, living and dead, in steps of 10 ms
	RSS, PeakRSS  int64 // resident set size and its high-water mark (VmRSS, VmHWM), bytes
	Fds           int   // open file descriptors
	Threads       int
}

// Schedstat is the scheduler's account of a set of threads: the time they
// ran on a CPU and the time they were runnable but waited on a run queue.
// Their sum is how much CPU the threads wanted, whether or not a contended
// machine gave it to them.
type Schedstat struct {
	RunNs, WaitNs int64
	// Slices counts the times the threads were put on a CPU (schedstat's
	// third field; 0 where the kernel does not give it): WaitNs/Slices is
	// the mean wait in a run queue before each.
	Slices int64
}

// ThreadAffinity is the CPU affinity of one thread: its id and its
// Cpus_allowed_list as the kernel prints it ("1", "0-3", "0,2").
type ThreadAffinity struct {
	Tid     int    `json:"tid"`
	CPUList string `json:"cpus"`
}

// CPUNs is user plus system CPU time in nanoseconds.
func (u Usage) CPUNs() int64 { return u.UserNs + u.SysNs }

// Exit is how a process ended, and what it printed.
type Exit struct {
	// Code is the exit code; -1 when a signal ended the process.
	Code int
	// Signal is "" or the signal that ended the process ("killed",
	// "terminated").
	Signal string
	// Killed reports that Stop had to send SIGKILL, and that is what ended
	// the process.
	Killed bool
	// Stdout is all of stdout, up to MaxStdout bytes; StdoutTruncated
	// reports that there was more.
	Stdout          []byte
	StdoutTruncated bool
	// StdoutTail is the last StdoutTailSize bytes of stdout.
	StdoutTail string
	// StderrTail is the last StderrTailSize bytes of stderr; StderrHead the
	// first, where a Go panic's message is when its goroutine dump pushes
	// it out of the tail.
	StderrTail, StderrHead string
	// Elapsed runs from the start to the exit.
	Elapsed time.Duration
	// ExitedBeforeStop reports that the process had exited by itself
	// before Stop was called: whatever its code, it did not wait to be
	// stopped.
	ExitedBeforeStop bool
	// Departed lists the processes of the group, present when the target
	// became ready, that had exited before Stop signalled it (the leader
	// first): a server that died behind a wrapper shell shows here.
	Departed []Departure
	// UserNs, SysNs and MaxRSS come from the rusage of the reap (wait4):
	// the exact CPU time of the process, every thread included, and its
	// peak resident set in bytes. Like getrusage(2) they include the
	// children the process itself waited for, not those it left behind.
	UserNs, SysNs, MaxRSS int64
}

// String describes the exit like os.ProcessState does ("exit status 1",
// "signal: killed"), noting an escalation to SIGKILL.
func (e Exit) String() string {
	s := fmt.Sprintf("exit status %d", e.Code)
	if e.Signal != "" {
		s = "signal: " + e.Signal
	}
	if e.Killed {
		s += " (after SIGKILL)"
	}
	return s
}

// FreeAddr binds 127.0.0.1:0, closes the listener and returns its address.
// The port is free when returned, but nothing reserves it: another process
// may take it before the target binds it. The window is short (until the
// target listens) and a collision needs another process to bind that very
// port in it, since the kernel picks port-0 binds at random from the
// ephemeral range; it shows as a target that fails to listen, or, if a
// server took the port, as the wrong server answering.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free address: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("free address: %w", err)
	}
	return addr, nil
}

// Departure is a process of the target's group that was there when the
// target became ready and has exited since: the server behind a wrapper
// shell, a worker process, or the leader itself.
type Departure struct {
	Pid int `json:"pid"`
	// Command is its command line as it was when the target became ready.
	Command string `json:"command"`
	// Status is how it ended ("exit status 1", "signal: segmentation
	// fault"), or "" when nobody but its parent could know (it was not
	// this process's child and has been reaped).
	Status string `json:"status,omitempty"`
}

// String is "pid N (command): status".
func (d Departure) String() string {
	st := d.Status
	if st == "" {
		st = "exited (status unknown: reaped by its parent)"
	}
	return fmt.Sprintf("pid %d (%s): %s", d.Pid, d.Command, st)
}
