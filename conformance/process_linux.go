//go:build linux

package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

// Process is a reference reactor run as a child process (`reactorlab
// serve`): its CPU, memory and descriptors are its own, a descriptor
// limit can be set, and its final statistics arrive when it stops.
type Process struct {
	Design reactors.DesignName
	// Config is the base configuration (nil: reactors.DefaultConfig); its
	// Faults make the target a mutant.
	Config *reactors.Config
	// Command runs the reactorlab binary (nil: this executable). The
	// serve arguments are appended.
	Command []string
}

// Name is "process:" and the design with its faults.
func (t Process) Name() string { return "process:" + refName(t.Design, t.Config) }

// Start runs `reactorlab serve` with the case's configuration and waits
// until both its addresses accept connections, at most until ctx's
// deadline: StartInstance, which starts every target of the suite, sets
// one (its start timeout); a ctx without one waits DefaultStartTimeout.
func (t Process) Start(ctx context.Context, setup Setup) (Instance, error) {
	cfg := refConfig(t.Design, t.Config, setup)
	dataAddr, ctlAddr, err := pickAddrs()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	cfg.Listen, cfg.ControlListen = "{addr}", ctlAddr
	argv := t.Command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("process target: %w", err)
		}
		argv = []string{exe}
	}
	argv = append(append([]string(nil), argv...), "serve", "--reactor", string(t.Design), "--lifetime", "10m")
	argv = append(argv, cfg.Args()...)
	var p *proc.Process
	for attempt := 1; ; attempt++ {
		p, err = proc.Start(ctx, proc.Spec{Argv: argv, Addr: dataAddr, WaitAddrs: []string{ctlAddr}, FdLimit: setup.FdLimit, Ready: readyBound(ctx, DefaultStartTimeout)})
		if err == nil {
			break
		}
		if attempt == portAttempts || !portTaken(err, dataAddr, ctlAddr) {
			return nil, fmt.Errorf("%s: %w", t.Name(), err)
		}
		// The control address is in argv: a new pair means new arguments.
		old := ctlAddr
		if dataAddr, ctlAddr, err = pickAddrs(); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name(), err)
		}
		for i, a := range argv {
			argv[i] = strings.ReplaceAll(a, "--control-listen="+old, "--control-listen="+ctlAddr)
		}
		cfg.ControlListen = ctlAddr
	}
	cfg.Listen = p.Addr()
	return &process{p: p, ctl: ctlAddr, ref: &Reference{Design: t.Design, Config: cfg}}, nil
}

// pickAddrs picks the data and control addresses of a process target's
// start: twoFreeAddrs, replaced by a test that takes a port first.
var pickAddrs = twoFreeAddrs

// twoFreeAddrs picks two distinct free loopback addresses: both ports are
// held open together, so they cannot be the same one (picking them one
// after the other can return the same port twice).
func twoFreeAddrs() (string, string, error) {
	a, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", fmt.Errorf("picking a free port: %w", err)
	}
	defer a.Close()
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", fmt.Errorf("picking a free port: %w", err)
	}
	defer b.Close()
	return a.Addr().String(), b.Addr().String(), nil
}

// Command is a black-box target: any server, in any language, run as a
// command. It is started with REACTORLAB_LISTEN=host:port in its
// environment and "{addr}" in its arguments replaced by the same address,
// and must serve a plain TCP byte echo there. It is also given a second,
// control address, always in REACTORLAB_CONTROL_LISTEN and as "{control}"
// in its arguments; a command that serves a byte echo there too (Control,
// or "{control}" in Argv) is waited for on both addresses, and S2 sends
// its PINGs there. Cases that need the reference protocol or internal
// counters are skipped.
type Command struct {
	Argv []string
	// Control says the command serves a byte echo on its control address
	// (REACTORLAB_CONTROL_LISTEN), as one whose Argv holds "{control}"
	// does whatever Control says.
	Control bool
	// Dir is the command's working directory ("" inherits this process's).
	Dir string
	// Grace is how long the command may take to exit after SIGTERM before
	// SIGKILL (0: 5 s).
	Grace time.Duration
	// Label, when set, is the command as its user wrote it, which Name
	// shows instead of Argv (a shell command line: "./srv", not
	// "/bin/sh -c exec ./srv").
	Label string
}

// Name is the command as a target's text (target.Command's String:
// "cmd:" and the command line), the command line being Label if set, else
// Argv joined by spaces; "cmd:" alone for a Command without either.
func (t Command) Name() string {
	line := t.Label
	if line == "" {
		line = strings.Join(t.Argv, " ")
	}
	if line == "" {
		return target.CommandPrefix
	}
	return target.Command(line).String()
}

// Start runs the command and waits until it accepts connections, at most
// until ctx's deadline: StartInstance, which starts every target of the
// suite, sets one (its start timeout, DefaultStartTimeout unless the
// caller gives another: a command that compiles first, as `go run` does,
// may need more); a ctx without one waits DefaultStartTimeout. The
// command's process group is watched from then on: any of its processes
// that exits before the case stops it makes the case fail with cause
// target.
func (t Command) Start(ctx context.Context, setup Setup) (Instance, error) {
	if len(t.Argv) == 0 {
		return nil, errors.New("command target: empty command")
	}
	dataAddr, ctlAddr, err := pickAddrs()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	for attempt := 1; ; attempt++ {
		spec := proc.Spec{Argv: t.Argv, Dir: t.Dir, Addr: dataAddr, FdLimit: setup.FdLimit, Ready: readyBound(ctx, DefaultStartTimeout), Grace: t.Grace}
		served := ""
		if t.ServesControl() {
			spec.ControlAddr, served = ctlAddr, ctlAddr
		} else {
			// Offered, not waited for: the server may ignore it.
			spec.Env = []string{proc.ControlListenEnv + "=" + ctlAddr}
		}
		p, err := proc.Start(ctx, spec)
		if err == nil {
			return &process{p: p, ctl: served}, nil
		}
		if attempt == portAttempts || !portTaken(err, dataAddr, ctlAddr) {
			return nil, fmt.Errorf("%s: %w", t.Name(), err)
		}
		// Another process took a port between its pick and the target's
		// bind: the environment's doing, not the target's. Another pair.
		if dataAddr, ctlAddr, err = pickAddrs(); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name(), err)
		}
	}
}

// portAttempts is how many pairs of addresses a start tries when the
// target could not bind one because another process had taken it.
const portAttempts = 3

// portTaken reports whether err, a failed start of a target given addrs,
// shows that one of those addresses was taken by another process: an
// address accepted on another process's listener (proc.ErrAddrTaken), or
// the target exited before it listened, and either its stderr says its bind
// failed with EADDRINUSE (in the words of libc, Go, the JVM, Erlang,
// Python or Node) or the address is bound by someone now. A target that
// exits for any other reason is its own failure.
func portTaken(err error, addrs ...string) bool {
	var pe *proc.StartError
	if !errors.As(err, &pe) {
		return false
	}
	if errors.Is(pe.Err, proc.ErrAddrTaken) {
		return true
	}
	if !errors.Is(pe.Err, proc.ErrExited) {
		return false
	}
	said := strings.ToLower(pe.Exit.StderrTail)
	if strings.Contains(said, "address already in use") || strings.Contains(said, "eaddrinuse") || strings.Contains(said, "address in use") {
		return true
	}
	for _, a := range addrs {
		if ln, lerr := net.Listen("tcp", a); lerr != nil {
			if errors.Is(lerr, unix.EADDRINUSE) {
				return true
			}
		} else {
			ln.Close()
		}
	}
	return false
}

// ServesControl reports whether the command serves its control address:
// Control, or "{control}" in Argv.
func (t Command) ServesControl() bool {
	if t.Control {
		return true
	}
	for _, a := range t.Argv {
		if strings.Contains(a, proc.ControlPlaceholder) {
			return true
		}
	}
	return false
}

// readyBound is how long a process target may take to accept
// connections: until ctx's deadline, or def when ctx has none.
func readyBound(ctx context.Context, def time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return def
}

type process struct {
	p          *proc.Process
	ctl        string
	ref        *Reference
	final      *Final
	terminated atomic.Bool // a case sent SIGTERM itself (Terminate)
}

// Terminate sends SIGTERM to the process group now (proc.Terminate).
func (i *process) Terminate() error {
	i.terminated.Store(true)
	return i.p.Terminate()
}

// Exited is closed once the process has exited and been reaped.
func (i *process) Exited() <-chan struct{} { return i.p.Done() }

func (i *process) Addr() string          { return i.p.Addr() }
func (i *process) Group() ([]int, error) { return i.p.Group() }
func (i *process) ControlAddr() string   { return i.ctl }
func (i *process) Reference() *Reference { return i.ref }

func (i *process) Stats() (reactors.Stats, error) {
	return reactors.Stats{}, fmt.Errorf("a process target's counters arrive when it stops: %w", ErrUnsupported)
}

// Usage sums the process group (a `go run` or `sh -c` wrapper's server
// is its child); CPU from per-thread schedstat (ns) where the kernel has
// it, else from /proc/pid/stat (10 ms ticks).
func (i *process) Usage() (Usage, error) {
	u, err := i.p.GroupUsage()
	if err != nil {
		return Usage{}, err
	}
	cpu, wait := time.Duration(u.CPUNs()), time.Duration(-1)
	if s, err := i.p.GroupSchedstat(); err == nil {
		cpu, wait = time.Duration(s.RunNs), time.Duration(s.WaitNs)
	}
	return Usage{CPU: cpu, RunqWait: wait, RSS: u.RSS, Fds: u.Fds}, nil
}

// serveOutput is the part of `reactorlab serve`'s JSON the suite reads.
type serveOutput struct {
	reactors.Stats
	StoppedBy string `json:"stopped_by"`
	Error     string `json:"error"`
}

func (i *process) Stop() (Final, error) {
	if i.final != nil {
		return *i.final, nil
	}
	exit, err := i.p.Stop()
	if err != nil {
		return Final{}, err
	}
	// What answers the SIGTERM the stop sent is clean: exit 0 (a reference
	// reactor exits 0 with its JSON), death by the signal itself (a shell
	// or `go run` wrapper), or the status 128 + SIGTERM that a JVM's
	// shutdown hooks and socat exit with. Anything else after the signal
	// (a crash, another status, a kill after the grace period) is a
	// finding about the stop, AtStop, and not the case's: the case's claim
	// was tested before it. Only an exit before the stop (below) is
	// charged to the case.
	f := Final{Exit: fmt.Sprintf("exit %d", exit.Code), Clean: true}
	if exit.Signal != "" {
		f.Exit = "signal " + exit.Signal
	}
	if exit.Killed {
		f.Exit += ", killed after the SIGTERM grace period"
	}
	answered := !exit.Killed && (exit.Code == 0 || exit.Signal == "terminated" || exit.Code == 128+int(unix.SIGTERM))
	switch {
	case answered:
		if exit.Code == 128+int(unix.SIGTERM) {
			f.Exit += " (128 + SIGTERM: the answer to the stop's signal)"
		}
	case exit.Killed && i.terminated.Load():
		// The case that sent SIGTERM judges the answer; what is wrong
		// besides (a crash, unreadable output) is still said below.
		f.Lingered = true
	default:
		f.AtStop = f.Exit
	}
	var problems []string
	if i.ref != nil {
		var out serveOutput
		line := bytes.TrimSpace(exit.Stdout)
		if err := json.Unmarshal(line, &out); err != nil && f.AtStop == "" {
			problems = append(problems, fmt.Sprintf("unreadable serve output %q: %v", truncate(line, 200), err))
		} else if err != nil {
			f.AtStop += fmt.Sprintf("; its output, unreadable: %q", truncate(line, 200))
		} else {
			f.Stats = &out.Stats
			if out.Error != "" {
				problems = append(problems, "reactor error: "+out.Error)
			}
			// A reference reactor ends by itself after a STOP frame: that is
			// the protocol, not a crash.
			if exit.ExitedBeforeStop && out.StoppedBy == "STOP frame" && f.Clean {
				exit.ExitedBeforeStop = false
				f.Exit += " after a STOP frame"
			}
		}
	}
	// A target is whole only while every process it had when it became
	// ready lives: one that exited before it was stopped (the server
	// behind a wrapper shell, or the leader itself) is a crash, whatever
	// its code and whatever the case's counts said.
	if exit.ExitedBeforeStop {
		f.Exit = "exited by itself before it was stopped (" + f.Exit + ")"
		f.AtStop = ""
		problems = append(problems, "")
	}
	for _, d := range exit.Departed {
		if d.Pid != i.p.Pid() { // the leader's exit is said above
			problems = append(problems, "a process of the target exited during the case: "+d.String())
		}
	}
	for _, p := range problems {
		f.Clean = false
		if p != "" {
			f.Exit += "; " + p
		}
	}
	if (!f.Clean || f.AtStop != "") && exit.StderrTail != "" {
		// A Go crash's message is at the top, its goroutine dump after.
		var said string
		if head := strings.TrimSpace(exit.StderrHead); head != "" && head != strings.TrimSpace(exit.StderrTail) {
			said = "; stderr begins: " + truncate([]byte(head), 1500)
		}
		said += "; stderr ends: " + strings.TrimSpace(exit.StderrTail)
		if f.Clean {
			f.AtStop += said
		} else {
			f.Exit += said
		}
	}
	i.final = &f
	return f, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// limitServing sets RLIMIT_NOFILE, soft and hard, in every process of
// inst that holds its listener (prlimit(2): lowering another process's
// limit needs only its uid, or CAP_SYS_RESOURCE): to want, or to 16 more
// than the most descriptors one of them holds if that is more (so that
// its table has room to fill). It returns the limit, the pids and the
// most descriptors held.
func limitServing(inst Instance, want uint64) (limit uint64, pids []int, held int, err error) {
	serving, _, err := ServingProcesses(inst)
	if err != nil {
		return 0, nil, 0, err
	}
	if len(serving) == 0 {
		return 0, nil, 0, errors.New("no process holds the listener")
	}
	for _, pid := range serving {
		n, err := procfs.CountFds(pid)
		if err != nil {
			return 0, nil, 0, fmt.Errorf("counting the descriptors of process %d: %w", pid, err)
		}
		held = max(held, n)
	}
	limit = max(want, uint64(held)+16)
	for _, pid := range serving {
		rl := unix.Rlimit{Cur: limit, Max: limit}
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &rl, nil); err != nil {
			return 0, nil, 0, fmt.Errorf("prlimit RLIMIT_NOFILE %d on process %d: %w", limit, pid, err)
		}
	}
	return limit, serving, held, nil
}
