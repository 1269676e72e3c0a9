//go:build linux

package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// maxLabOutput bounds what is read from the run child: its result holds
// up to two stdouts of proc.MaxStdout, base64-encoded.
const maxLabOutput = 4*proc.MaxStdout + 1<<20

// checkBudget bounds Check.
const checkBudget = 10 * time.Second

// testHooks are set only by this package's tests, never concurrently with
// a run.
var testHooks struct {
	// up is called in the parent once both processes are up.
	up func(labUp)
	// afterRun is called in the parent after the run, before the
	// after-audit.
	afterRun func(*Result)
	// brk is planted in every run child's request (labRequest.Break).
	brk string
	// links are host link names the audit watches besides the lab's own
	// (hostLinks): a test's planted links.
	links []string
}

// Run runs one measured pair as spec says, and returns its record.
//
// It returns within spec.Timeout (plus the time to reap what it killed),
// whatever the processes do; every process and goroutine it started has
// ended by then, and no thread of this process, or of the run child, is
// left in another network namespace or on another CPU mask than before.
// The result is nil only with an error for a spec refused before anything
// started (the error then says which field is wrong). Otherwise the result
// is complete as far as the run went, always carries the leak audit, and is
// Valid only if nothing went wrong; the error reports a run that could not
// be carried out: a lab the kernel refuses in Mode lab (wrapping
// ErrUnavailable), a lab whose setup failed otherwise (in any mode), a
// server that could not be started (wrapping a *target.StartError, also in
// Result.StartFailure: its program missing, an exit before it
// listened, or no listener within spec.Ready), a timeout, cancellation of
// ctx.
//
// The audit sees the whole process: descriptors opened and processes
// started by other goroutines during the run are blamed on it. Run one at
// a time, from a process that is otherwise quiet.
func Run(ctx context.Context, ls Spec) (*Result, error) {
	start := time.Now()
	s, err := ls.validate()
	if err == nil {
		s.Placement, err = s.Placement.ResolveAllowed()
	}
	if err != nil {
		return nil, fmt.Errorf("lab spec: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	ctx, cancel := context.WithDeadlineCause(ctx, start.Add(s.Timeout-auditReserve),
		fmt.Errorf("timeout %v", s.Timeout))
	defer cancel()

	primeRuntime()
	before, berr := takeSnapshot()
	res := &Result{Placement: s.Placement}
	var child []string // what the run child and its keeper found
	switch s.Mode {
	case ModeLoopback:
		child, err = runChild(ctx, s, res, true)
	default:
		child, err = runChild(ctx, s, res, false)
		if errors.Is(err, ErrUnavailable) && s.Mode == ModeAuto {
			res.Fallback = err.Error()
			res.UserNS = false
			var more []string
			more, err = runChild(ctx, s, res, true)
			child = append(child, more...)
		}
	}
	if testHooks.afterRun != nil {
		testHooks.afterRun(res)
	}
	ca := res.Audit.Child
	res.Audit = audit(before, berr, res.Namespaces)
	res.Audit.Child = ca
	res.Audit.Diffs = append(res.Audit.Diffs, child...)
	res.judge(err, s.ServerMayExit, s.Alone())
	res.Elapsed = time.Since(start)
	return res, err
}

// Check sets up an empty lab and tears it down. It returns nil if Run
// can run in the lab; an error wrapping ErrUnavailable that names the
// step the kernel refused and its reason; or, for a lab that is broken
// rather than refused, a plain error. It takes a few tens of milliseconds
// and leaves nothing behind.
func Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, checkBudget)
	defer cancel()
	c, err := startLab(ctx, labRequest{Probe: true, Budget: checkBudget - reportMargin}, nil)
	if err != nil {
		return err
	}
	var setupErr error
	ok := false
	for ev := range c.events {
		if ev.SetupError != "" {
			setupErr = ev.setupErr()
		}
		ok = ok || ev.Setup != nil
	}
	waitErr := c.wait()
	switch {
	case setupErr != nil:
		return fmt.Errorf("check lab: %w", setupErr)
	case !ok:
		return fmt.Errorf("check lab: the lab ended without a word (keeper: %v); stderr: %s", waitErr, c.stderr.String())
	case waitErr != nil:
		return fmt.Errorf("check lab: the lab's keeper: %w; stderr: %s", waitErr, c.stderr.String())
	}
	return nil
}

// Required reports whether this process is expected to have a lab, and
// why: it runs as root in the initial user namespace (a CI runner, say),
// or REACTORLAB_REQUIRE_LAB=1 says so. Tests that need a lab use it to fail
// rather than skip where a lab must work, so that a broken lab cannot pass
// for a forbidden one. REACTORLAB_REQUIRE_LAB=0 waives it (root in a
// container without namespace privileges).
func Required() (required bool, why string) {
	switch os.Getenv(RequireEnv) {
	case "1":
		return true, RequireEnv + "=1"
	case "0":
		return false, ""
	}
	if os.Geteuid() != 0 {
		return false, ""
	}
	m, err := procfs.ReadUIDMap(procfs.Self)
	if err != nil {
		return false, ""
	}
	if len(m) == 1 && m[0] == [3]string{"0", "0", "4294967295"} {
		return true, "root in the initial user namespace"
	}
	return false, ""
}

// setupErr is the error a SetupError event stands for: wrapping
// ErrUnavailable when the kernel refused namespaces, plain otherwise.
func (ev labEvent) setupErr() error {
	if ev.Unavailable {
		return fmt.Errorf("%w: %s", ErrUnavailable, ev.SetupError)
	}
	return fmt.Errorf("setup failed: %s", ev.SetupError)
}

// runChild runs the pair in a run child, a lab child or (loopback) its
// counterpart in this process's namespaces, both under a keeper, and
// copies its report into res. It returns what the run child's audit of
// itself and the keeper's sweep found, for the leak audit. An error
// wrapping ErrUnavailable means nothing was started.
func runChild(ctx context.Context, s *validSpec, res *Result, loopback bool) (found []string, err error) {
	res.Mode = ModeLab
	if loopback {
		res.Mode = ModeLoopback
	}
	deadline, _ := ctx.Deadline()
	req := labRequest{Spec: s.Spec, Sysctls: s.sysctls, Budget: time.Until(deadline) - reportMargin,
		Loopback: loopback}
	c, err := startLab(ctx, req, s.Interrupt)
	if err != nil {
		return nil, err
	}
	var setupErr error
	var rep *labReport
	labPid := 0
	for ev := range c.events {
		switch {
		case ev.Started != nil:
			labPid, res.UserNS = ev.Started.Pid, ev.Started.UserNS
			res.Namespaces = appendNew(res.Namespaces, ev.Started.Namespaces...)
		case ev.SetupError != "":
			setupErr = ev.setupErr()
		case ev.Setup != nil:
			res.Namespaces = appendNew(res.Namespaces, ev.Setup.Namespaces...)
			res.Sysctls, res.Addr, res.Control = ev.Setup.Sysctls, ev.Setup.Addr, ev.Setup.Control
		case ev.Up != nil:
			if testHooks.up != nil {
				up := *ev.Up
				up.LabPid, up.Namespaces = labPid, slices.Clone(res.Namespaces)
				testHooks.up(up)
			}
		case ev.Result != nil:
			rep = ev.Result
		case ev.Swept != nil || ev.SweepError != "":
			for _, p := range ev.Swept {
				found = append(found, "keeper: process "+p+", started by the run, outlived the run child and was killed")
			}
			if ev.SweepError != "" {
				found = append(found, "keeper: "+ev.SweepError)
			}
		}
	}
	waitErr := c.wait()
	where := "lab"
	if loopback {
		where = "loopback"
	}
	if setupErr != nil {
		return found, fmt.Errorf("%s: %w", where, setupErr)
	}
	if rep == nil {
		if ctx.Err() != nil {
			return found, fmt.Errorf("%s: %w: the run child and everything it started were killed", where, context.Cause(ctx))
		}
		return found, fmt.Errorf("%s: the run child ended without a result (keeper: %v); stderr: %s", where, waitErr, c.stderr.String())
	}
	res.Addr, res.Control, res.Server, res.Client = rep.Addr, rep.Control, rep.Server, rep.Client
	res.Audit.Child = rep.Audit
	if rep.Audit == nil {
		found = append(found, "run child: reported no audit of itself")
	} else {
		for _, d := range rep.Audit.Diffs {
			found = append(found, "run child: "+d)
		}
	}
	if rep.Start != nil {
		res.StartFailure = rep.Start
		return found, fmt.Errorf("%s: %w", where, rep.Start)
	}
	if rep.Error != "" {
		return found, fmt.Errorf("%s: %s", where, rep.Error)
	}
	if waitErr != nil {
		return found, fmt.Errorf("%s: the keeper: %w; stderr: %s", where, waitErr, c.stderr.String())
	}
	return found, nil
}

// appendNew appends each of vs not already in s.
func appendNew(s []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// labChild is a started keeper, and through it the run child.
type labChild struct {
	cmd    *exec.Cmd     // the keeper
	events chan labEvent // closed at the end of their output
	stderr *tailBuffer
	// release lets the thread that forked the keeper go.
	release func()
	// reaped is closed once the keeper is reaped.
	reaped chan struct{}
}

// startLab starts the keeper (role "lab-keeper"), which starts the run
// child (the lab child, or for req.Loopback its counterpart in this
// process's namespaces) and passes it req. The keeper is this process's
// child, in this process's namespaces, in a process group of its own, with
// SIGTERM as its parent-death signal, and a child subreaper: when this
// process dies, however it dies, the keeper kills the run child (a lab
// child takes its whole PID namespace with it) and reaps it at once, so no
// zombie is left to pin the lab's PID namespace until the host's init gets
// round to reaping it; then it kills every process of the run orphaned to
// it (on loopback, where no PID namespace does). The keeper's own zombie
// holds nothing of the run. Its first event says where the run child runs
// or why it could not start. When interrupt is closed (it may be nil) the
// keeper is sent SIGINT, which it passes on to the run child, which winds
// the run down (Spec.Interrupt).
func startLab(ctx context.Context, req labRequest, interrupt <-chan struct{}) (*labChild, error) {
	req.Break = testHooks.brk
	var err error
	if req.ParentNS, err = ownNamespaces(); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("lab request: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("lab: stdout pipe: %w", err)
	}
	c := &labChild{events: make(chan labEvent), stderr: &tailBuffer{max: proc.StderrTailSize}, reaped: make(chan struct{})}
	cmd := exec.CommandContext(ctx, selfExe)
	cmd.Env = append(os.Environ(), RoleEnv+"="+keeperRole)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stdout = w
	cmd.Stderr = c.stderr
	// On ctx's end the keeper is asked to end the lab (SIGTERM) and so
	// reaps it; only if it does not within WaitDelay is it killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	c.cmd = cmd
	c.release, err = startLocked(cmd)
	w.Close() // the keeper and the lab child have their copies
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("lab: start the keeper: %w", err)
	}
	if interrupt != nil {
		go func() {
			select {
			case <-interrupt:
				cmd.Process.Signal(syscall.SIGINT)
			case <-c.reaped:
			}
		}()
	}
	stopRead := context.AfterFunc(ctx, func() {
		// Ending the lab ends every writer, so EOF follows; this only
		// bounds the wait if it somehow does not.
		time.AfterFunc(2*cmd.WaitDelay, func() { r.Close() })
	})
	go func() {
		defer close(c.events)
		defer stopRead()
		defer r.Close()
		dec := json.NewDecoder(io.LimitReader(r, maxLabOutput))
		for {
			var ev labEvent
			if err := dec.Decode(&ev); err != nil {
				if err != io.EOF {
					fmt.Fprintf(c.stderr, "\nharness: reading the lab's output: %v\n", err)
					io.Copy(io.Discard, r) // let it finish writing
				}
				return
			}
			c.events <- ev
		}
	}()
	return c, nil
}

// labCloneFlags are the lab child's new namespaces.
func labCloneFlags(userNS bool) uintptr {
	f := uintptr(unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWNS)
	if userNS {
		f |= unix.CLONE_NEWUSER
	}
	return f
}

// wait reaps the keeper, after the output has ended, and lets go of the
// thread that forked it.
func (c *labChild) wait() error {
	for range c.events { // drain, if the caller stopped early
	}
	err := c.cmd.Wait()
	close(c.reaped)
	c.release()
	return err
}

// startLocked starts cmd from a goroutine locked to its thread, and keeps
// that thread locked until release is called (after the reap): the
// child's parent-death signal fires when the forking thread exits, and Go
// ends a thread when a goroutine locked to it returns, which another
// goroutine could otherwise do to this one. The thread changes nothing
// about itself, so it goes back to Go's pool on release.
func startLocked(cmd *exec.Cmd) (release func(), err error) {
	errc := make(chan error)
	rel := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		errc <- err
		if err == nil {
			<-rel
		}
	}()
	if err := <-errc; err != nil {
		<-done
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(rel); <-done }) }, nil
}

// ownNamespaces reads this process's namespaces by kind.
func ownNamespaces() (map[string]string, error) {
	m := map[string]string{}
	for _, k := range []string{"net", "pid", "mnt", "user"} {
		l, err := procfs.Namespace(procfs.Self, k)
		if err != nil {
			return nil, fmt.Errorf("read own namespaces: %w", err)
		}
		m[k] = l
	}
	return m, nil
}

// childNamespaces reads the namespaces of pid that differ from parent's.
// A child that has already exited has none left to read.
func childNamespaces(pid int, parent map[string]string) []string {
	var out []string
	for _, k := range []string{"net", "pid", "mnt", "user"} {
		l, err := procfs.Namespace(pid, k)
		if err == nil && l != parent[k] {
			out = append(out, l)
		}
	}
	return out
}

// judge fills Valid and Invalid from the run's error, both processes and
// the audit.
func (r *Result) judge(runErr error, serverMayExit, alone bool) {
	var inv []string
	if runErr != nil {
		inv = append(inv, runErr.Error())
	}
	for _, p := range []struct {
		name string
		r    *ProcResult
	}{{"server", r.Server}, {"client", r.Client}} {
		if p.r == nil {
			if runErr == nil && !(alone && p.name == "server") {
				inv = append(inv, p.name+": never started")
			}
			continue
		}
		inv = append(inv, p.r.problems(p.name, serverMayExit)...)
	}
	for _, d := range r.Audit.Diffs {
		inv = append(inv, "leak audit: "+d)
	}
	r.Invalid = inv
	r.Valid = len(inv) == 0
}

// problems names what a process did that makes a run invalid.
func (p *ProcResult) problems(name string, serverMayExit bool) []string {
	var out []string
	if !p.AffinityOK {
		out = append(out, fmt.Sprintf("%s: placement on CPUs %s did not hold: %s", name, p.Placement, strings.Join(p.AffinityBad, "; ")))
	}
	exit := fmt.Sprintf("exit status %d", p.Code)
	if p.Signal != "" {
		exit = "signal: " + p.Signal
	}
	switch {
	case name == "server" && p.SelfExit && !(serverMayExit && p.Code == 0):
		out = append(out, fmt.Sprintf("server: exited (%s) before it was stopped: it quit or crashed mid-run", exit))
	case name == "server" && p.SelfExit:
		// a clean exit it was allowed: it obeyed a STOP
	case name == "server" && p.Killed:
		out = append(out, "server: did not exit within the grace after SIGTERM and was killed")
	case name == "server" && !(p.Code == 0 || p.Signal == "terminated"):
		out = append(out, fmt.Sprintf("server: %s on SIGTERM", exit))
	case name == "client" && p.TimedOut:
		out = append(out, fmt.Sprintf("client: did not exit in its time and was stopped (%s)", exit))
	case name == "client" && p.Code == cli.ExitInterrupted:
		out = append(out, "client: interrupted by a signal, cut short ("+exit+")")
	case name == "client" && (p.Code != 0 || p.Signal != ""):
		out = append(out, "client: "+exit)
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b[max(0, len(t.b)-t.max):]))
}
