//go:build linux

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The roles of the run child, of its keeper, and of the keeper's probe
// (internalRoles).
const (
	labRole    = "lab"
	keeperRole = "lab-keeper"
	nopRole    = "lab-nop"
)

// The veth pair's ends, in the server's and the client's namespace.
const (
	serverLink = "rl-server"
	clientLink = "rl-client"
)

// Faults a test plants in the run child (labRequest.Break). Each stands
// for a bug of ours, so that a test can show it is caught: breakVeth and
// breakSysctl make a setup step fail for real (the kernel refuses an
// over-long peer name, a malformed port range), breakWorkers lets the
// workers' threads go back to Go's pool in whatever namespace they are.
const (
	breakVeth    = "veth"
	breakSysctl  = "sysctl"
	breakWorkers = "unlock-workers"
)

// sweepBound bounds the keeper's sweep of what the run left behind; with
// the kill of the run child it must fit in the harness's patience with a
// keeper it has told to end (the keeper's WaitDelay).
const sweepBound = time.Second

func init() {
	RegisterRole(labRole, labMain)
	RegisterRole(keeperRole, keeperMain)
	RegisterRole(nopRole, func([]string) int { return 0 })
}

// keeperMain is the keeper, started by the harness with SIGTERM as its
// parent-death signal. It makes itself a child subreaper, reads the
// labRequest from stdin and starts the run child with it: for a lab, in
// new network, PID and mount namespaces (tried first when root), else with
// a user namespace too, mapping this uid and gid to root; for loopback, in
// the keeper's own namespaces. The run child has SIGKILL as its
// parent-death signal and the keeper's stdout and stderr. SIGINT is passed
// on to the run child, which winds the run down (LabSpec.Interrupt). The keeper
// reports the start (or why it failed, as a setup error) on stdout before
// the child can write anything (the child waits for the request on its
// stdin), then waits for the child; on SIGTERM it kills the child and
// reaps it, so a lab's PID namespace is gone when the keeper exits.
//
// Either way it then sweeps: every process of the run whose parent died
// has become the keeper's child (it is a subreaper), and the keeper kills
// and reaps each until it has no child left, so nothing the run started
// outlives it, whatever process group or session it moved to. After a run
// child that ended by itself it reports what it had to kill (a leak: the
// run child had stopped everything it started); after one it killed, that
// is how the run ends. It exits with the run child's status.
func keeperMain([]string) int {
	out := json.NewEncoder(os.Stdout)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, syscall.SIGINT)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		out.Encode(labEvent{SetupError: "keeper: " + os.NewSyscallError("prctl PR_SET_CHILD_SUBREAPER", err).Error()})
		return 1
	}
	body, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	var req labRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		out.Encode(labEvent{SetupError: "keeper: read the request: " + err.Error()})
		return 1
	}
	type attempt struct {
		what   string
		userNS bool
	}
	attempts := []attempt{{"clone user,net,pid,mnt", true}}
	switch {
	case req.Loopback:
		attempts = []attempt{{"start the loopback run child", false}}
	case os.Geteuid() == 0:
		attempts = []attempt{{"clone net,pid,mnt", false}, {"clone user,net,pid,mnt", true}}
	}
	var failures []string
	refused := true // every attempt was the kernel refusing namespaces
	for _, a := range attempts {
		flags := uintptr(0)
		if !req.Loopback {
			flags = labCloneFlags(a.userNS)
		}
		attr := &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL}
		if a.userNS {
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
		cmd := exec.Command(selfExe)
		cmd.Env = append(os.Environ(), RoleEnv+"="+labRole)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			failures, refused = append(failures, a.what+": "+err.Error()), false
			continue
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = attr
		release, err := startLocked(cmd)
		if err != nil {
			// Go's syscall package leaks the pipe it uses to hand over uid
			// and gid maps when the clone itself fails (Go 1.26:
			// forkAndExecInChild returns before it closes mapPipe); that
			// is one reason this runs in the keeper, which exits soon.
			stdin.Close()
			why, isRefusal := cloneRefused(flags, err)
			failures, refused = append(failures, a.what+": "+why), refused && isRefusal
			continue
		}
		pid := cmd.Process.Pid
		out.Encode(labEvent{Started: &labStarted{Pid: pid, UserNS: a.userNS, Namespaces: childNamespaces(pid, req.ParentNS)}})
		stdin.Write(body) // an error shows as the child's
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		killed := false
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-intr: // wind down: the run child stops its processes and reports
				cmd.Process.Signal(syscall.SIGINT)
			case <-term:
				cmd.Process.Kill()
				err, killed = <-done, true
				break wait
			}
		}
		release()
		// Only now: the reap above must not race with the sweep's.
		swept, serr := sweep(sweepBound)
		if killed {
			// Killing what is left is how a killed run ends (in a lab, the
			// PID namespace does it): nothing to report but a failure.
			swept = nil
		}
		if len(swept) > 0 || serr != nil {
			ev := labEvent{Swept: swept}
			if serr != nil {
				ev.SweepError = serr.Error()
			}
			out.Encode(ev) // last: the harness may be gone (SIGPIPE ends this process, which is done)
		}
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() >= 0 {
			return cmd.ProcessState.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "lab keeper: the run child: %v\n", err)
		return 1
	}
	out.Encode(labEvent{SetupError: strings.Join(failures, "; "), Unavailable: refused})
	return 1
}

// cloneRefused says why starting a run child with the namespaces flags
// failed (err), and whether that was the kernel refusing the namespaces:
// err must be one of a refusal's errnos, and a probe must confirm it. Go
// reports a failed clone, a failed uid or gid map and a failed exec alike
// (one errno, from the child or the clone), so the probe tells them apart:
// the same clone, without maps, of a program that only exits, must fail
// too, and this program must start without namespaces. A failure the
// probe does not confirm is ours (a bad map, say), not the kernel's.
func cloneRefused(flags uintptr, err error) (why string, refused bool) {
	why = err.Error()
	if flags == 0 || !refusal(err) {
		return why, false
	}
	if perr := startNop(flags); perr == nil {
		return why + " (yet the kernel makes these namespaces: a probe without the uid and gid maps started)", false
	}
	if perr := startNop(0); perr != nil {
		return fmt.Sprintf("%s (and this program does not start even without namespaces: %v)", why, perr), false
	}
	return why, true
}

// startNop starts this program as the role "lab-nop" (which exits at once)
// with the clone flags, and reaps it.
func startNop(flags uintptr) error {
	cmd := exec.Command(selfExe)
	cmd.Env = append(os.Environ(), RoleEnv+"="+nopRole)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	cmd.Wait()
	return nil
}

// refusal reports whether err carries an errno with which the kernel
// refuses a namespace for lack of privilege or quota: EPERM, EACCES,
// ENOSPC (a user.max_*_namespaces limit), EINVAL (no such namespace in
// this kernel, or not allowed here, such as a user namespace from a
// chroot) or EUSERS (nesting too deep).
func refusal(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case unix.EPERM, unix.EACCES, unix.ENOSPC, unix.EINVAL, unix.EUSERS:
		return true
	}
	return false
}

// sweep kills and reaps every child of this process, a child subreaper, so
// every descendant of it: a process whose parent dies becomes its child.
// It kills only its own children, whose pids cannot be reused until it
// reaps them, so it never signals a stranger. It returns the living
// processes it killed ("pid (comm) start=ticks"), and an error if some
// child was left after bound.
func sweep(bound time.Duration) (killed []string, err error) {
	self := os.Getpid()
	deadline := time.Now().Add(bound)
	seen := map[string]bool{}
	for {
		procs, err := readProcs()
		if err != nil {
			return killed, fmt.Errorf("sweep: %w", err)
		}
		for _, p := range procs {
			if p.ppid != self || p.state == "Z" || p.state == "X" {
				continue
			}
			name := fmt.Sprintf("%d (%s) start=%s", p.pid, p.comm, p.start)
			if !seen[name] {
				seen[name] = true
				killed = append(killed, name)
			}
			unix.Kill(p.pid, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return killed, nil // no child left, so no descendant
		case err != nil && !errors.Is(err, unix.EINTR):
			return killed, fmt.Errorf("sweep: %w", os.NewSyscallError("wait4", err))
		case pid > 0:
			continue // reaped one; its children, if any, are this process's now
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("sweep: children left after %v", bound)
		}
		time.Sleep(time.Millisecond)
	}
}

// errInterrupted is the cause of a run wound down by SIGINT
// (LabSpec.Interrupt).
var errInterrupted = errors.New("a signal to the harness wound it down")

// labRequest is what the parent sends the run child on its stdin.
type labRequest struct {
	Spec    LabSpec           `json:"spec"`    // validated, defaults applied
	Sysctls map[string]string `json:"sysctls"` // to set in both namespaces
	// Budget is how long the child has, from its start, until it must have
	// reported its result; the parent kills it soon after.
	Budget time.Duration `json:"budget_ns"`
	// ParentNS are the parent's namespaces by kind ("mnt": "mnt:[…]"); the
	// lab child refuses to run in the parent's mount or PID namespace, and
	// reports only its namespaces that differ from them.
	ParentNS map[string]string `json:"parent_ns"`
	// Loopback asks for a run on 127.0.0.1 in the parent's namespaces: no
	// namespace is made, nothing is mounted.
	Loopback bool `json:"loopback,omitempty"`
	// Probe asks for the setup alone (CheckLab): the child reports it and
	// exits.
	Probe bool `json:"probe,omitempty"`
	// Break is a fault planted by a test (breakVeth…); "" in every real
	// run.
	Break string `json:"break,omitempty"`
}

// labEvent is one JSON line from the keeper or the run child; exactly one
// field is set (Unavailable goes with SetupError, SweepError with Swept).
type labEvent struct {
	// Started (from the keeper, first): the run child runs.
	Started *labStarted `json:"started,omitempty"`
	// SetupError: the run could not be set up ("step: reason"). Nothing was
	// started; the child exits. Unavailable says the kernel refused
	// namespaces (ErrLabUnavailable); otherwise the lab is broken.
	SetupError  string `json:"setup_error,omitempty"`
	Unavailable bool   `json:"unavailable,omitempty"`
	// Setup: the namespaces exist, joined and configured.
	Setup *labSetup `json:"setup,omitempty"`
	// Up: both processes have started.
	Up *labUp `json:"up,omitempty"`
	// Result: the run is over and both processes are reaped.
	Result *labReport `json:"result,omitempty"`
	// Swept (from the keeper, last): processes of the run it killed after
	// the run child had exited; SweepError: some could not be.
	Swept      []string `json:"swept,omitempty"`
	SweepError string   `json:"sweep_error,omitempty"`
}

type labStarted struct {
	Pid        int      `json:"pid"`        // in the keeper's (the harness's) PID namespace
	UserNS     bool     `json:"user_ns"`    // it runs in a user namespace of its own
	Namespaces []string `json:"namespaces"` // its namespaces that are not the harness's
}

type labSetup struct {
	Namespaces []string          `json:"namespaces"`
	Sysctls    map[string]string `json:"sysctls"`
	Addr       string            `json:"addr"`
	Control    string            `json:"control"`
}

type labReport struct {
	Addr    string      `json:"addr"`
	Control string      `json:"control"`
	Server  *ProcResult `json:"server,omitempty"`
	Client  *ProcResult `json:"client,omitempty"`
	Error   string      `json:"error,omitempty"`
	// Start is why the server could not be started (Error says it too).
	Start *StartFailure `json:"start,omitempty"`
	// Audit is the child's audit of itself, after both processes were
	// reaped and its workers ended.
	Audit *ChildAudit `json:"audit"`
}

// labMain is the run child. For a lab it is PID 1 of its own PID
// namespace, in its own network and mount namespaces; for loopback it runs
// in the harness's namespaces. It reads a labRequest from stdin, writes
// labEvents to stdout, and returns 0 once it has reported a result, 1 if
// the run could not be set up. Before it reports, with its processes
// reaped and its workers ended, it audits itself: every thread must be
// back in its own network namespace and on a mask it started with, and no
// process it started may still run. When a lab child exits, the kernel
// kills whatever is left in its PID namespace; the keeper sweeps up what a
// loopback run child leaves.
func labMain([]string) int {
	// SIGINT winds the run down (LabSpec.Interrupt); caught first, as the
	// default would end the run child without a report.
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, syscall.SIGINT)
	defer signal.Stop(intr)
	out := json.NewEncoder(os.Stdout)
	setupFailed := func(serr *setupError) int {
		out.Encode(labEvent{SetupError: serr.step + ": " + serr.err.Error(), Unavailable: serr.unavailable})
		return 1
	}
	start := time.Now()
	var req labRequest
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 1<<20)).Decode(&req); err != nil {
		return setupFailed(&setupError{step: "read the request", err: err})
	}
	if req.Break == breakWorkers {
		workersReturnThreads = true
	}
	base, err := childBaseline()
	if err != nil {
		return setupFailed(&setupError{step: "read the run child's threads", err: err})
	}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(req.Budget))
	defer cancel()

	var l *lab
	var serr *setupError
	if req.Loopback {
		l, serr = setupLoopback(req)
	} else {
		if err := checkLabChild(req.ParentNS); err != nil {
			return setupFailed(&setupError{step: "check the namespaces", err: err})
		}
		l, serr = setupLab(req)
	}
	if serr != nil {
		return setupFailed(serr)
	}
	out.Encode(labEvent{Setup: &labSetup{Namespaces: l.namespaces, Sysctls: l.sysctls, Addr: l.addr, Control: l.control}})
	rep := &labReport{Addr: l.addr, Control: l.control}
	if !req.Probe {
		s := &spec{LabSpec: req.Spec, sysctls: req.Sysctls}
		pr := pair{server: l.server.w, client: l.client.w, addr: l.addr, control: l.control, probe: !req.Loopback}
		octx, ocancel := context.WithCancelCause(ctx)
		go func() {
			select {
			case <-intr:
				ocancel(errInterrupted)
			case <-octx.Done():
			}
		}()
		var err error
		rep.Server, rep.Client, err = orchestrate(octx, s, pr, func(up labUp) { out.Encode(labEvent{Up: &up}) })
		ocancel(nil)
		if err != nil {
			rep.Error = err.Error()
			if sf := (*StartFailure)(nil); errors.As(err, &sf) {
				rep.Start = sf
			}
		}
	}
	l.close() // both processes are reaped: the workers may end
	// The audit may take up to auditSettle while it finds a difference,
	// and must leave time to report within the budget's margin.
	settle := min(auditSettle, time.Until(start.Add(req.Budget+reportMargin/2)))
	rep.Audit = auditChild(base, settle)
	if req.Probe {
		if len(rep.Audit.Diffs) > 0 {
			fmt.Fprintf(os.Stderr, "lab: probe: %s\n", strings.Join(rep.Audit.Diffs, "; "))
			return 1
		}
		return 0
	}
	if err := out.Encode(labEvent{Result: rep}); err != nil {
		fmt.Fprintf(os.Stderr, "lab: report the result: %v\n", err)
		return 1
	}
	return 0
}

// checkLabChild refuses to set up a lab anywhere but in fresh PID and mount
// namespaces: the role mounts over /proc and changes mount propagation,
// which must never happen to the parent's mounts.
func checkLabChild(parent map[string]string) error {
	if os.Getpid() != 1 {
		return fmt.Errorf("pid %d: the lab role runs only as PID 1 of a new PID namespace, started by harness.Run", os.Getpid())
	}
	for _, k := range []string{"mnt", "pid"} {
		own, err := os.Readlink("/proc/self/ns/" + k)
		if err != nil {
			return err
		}
		if p := parent[k]; p == "" || p == own {
			return fmt.Errorf("still in the parent's %s namespace %s", k, own)
		}
	}
	return nil
}

// setupError is a failed step of the run's setup. unavailable says it is
// the kernel refusing namespaces (ErrLabUnavailable), not a broken lab.
type setupError struct {
	step        string
	err         error
	unavailable bool
}

// labNet is one side's network namespace: the worker whose thread is in it
// and a descriptor of it. On loopback there is no namespace: ns is -1 and
// id "".
type labNet struct {
	w  *worker
	ns netns.NsHandle
	id string // "net:[…]"
}

type lab struct {
	server, client *labNet
	addr, control  string            // the server's addresses
	namespaces     []string          // the lab's own and both sides'
	sysctls        map[string]string // as read back (loopback: the host's, read only)
}

// setupLab makes the mounts private, mounts the lab's /proc, creates the
// two network namespaces, the veth between them, and sets the sysctls.
// Only the kernel refusing the /proc mount or a network namespace, or a
// sysctl for lack of privilege, makes the error unavailable.
func setupLab(req labRequest) (*lab, *setupError) {
	// Nothing this process mounts may propagate to the parent's mounts. In
	// a mount namespace of its own (and owned by its user namespace, if
	// rootless) this never fails unless we got it wrong.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, &setupError{step: "make mounts private", err: os.NewSyscallError("mount", err)}
	}
	// A /proc of this PID namespace: pids the lab starts are numbered in it,
	// and /proc/self, /proc/<pid> and /proc/thread-self must mean them. The
	// kernel refuses it where /proc is partly hidden from this user
	// namespace (a container's masked /proc), for one.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, &setupError{step: "mount /proc", err: os.NewSyscallError("mount", err), unavailable: refusal(err)}
	}
	l := &lab{
		addr:    net.JoinHostPort(LabServerIP, strconv.Itoa(LabDataPort)),
		control: net.JoinHostPort(LabServerIP, strconv.Itoa(LabDataPort)),
	}
	if req.Spec.Alone() {
		l.addr, l.control = "", ""
	} else if req.Spec.Control {
		l.control = net.JoinHostPort(LabServerIP, strconv.Itoa(LabControlPort))
	}
	for _, k := range []string{"net", "pid", "mnt", "user"} {
		own, err := os.Readlink("/proc/self/ns/" + k)
		if err != nil {
			return nil, &setupError{step: "read the lab's namespaces", err: err}
		}
		if own != req.ParentNS[k] {
			l.namespaces = append(l.namespaces, own)
		}
	}
	var err error
	if l.server, err = newLabNet("server"); err != nil {
		return nil, &setupError{step: "create the server's network namespace", err: err, unavailable: isRefused(err)}
	}
	if l.client, err = newLabNet("client"); err != nil {
		l.server.close()
		return nil, &setupError{step: "create the client's network namespace", err: err, unavailable: isRefused(err)}
	}
	l.namespaces = append(l.namespaces, l.server.id, l.client.id)
	if serr := l.configure(req.Sysctls, req.Break); serr != nil {
		l.close()
		return nil, serr
	}
	return l, nil
}

// setupLoopback starts the two workers in this process's namespaces and
// picks the server's addresses on 127.0.0.1; the sysctls are the host's,
// read, never written.
func setupLoopback(req labRequest) (*lab, *setupError) {
	l := &lab{sysctls: readSysctls(req.Sysctls)}
	if !req.Spec.Alone() {
		var err error
		if l.addr, err = proc.FreeAddr(); err != nil {
			return nil, &setupError{step: "loopback", err: err}
		}
		l.control = l.addr
		for req.Spec.Control && l.control == l.addr {
			if l.control, err = proc.FreeAddr(); err != nil {
				return nil, &setupError{step: "loopback", err: err}
			}
		}
	}
	for _, side := range []struct {
		name string
		n    **labNet
	}{{"server", &l.server}, {"client", &l.client}} {
		w, err := startWorker(side.name, nil)
		if err != nil {
			if l.server != nil {
				l.server.close()
			}
			return nil, &setupError{step: "loopback: start the " + side.name + "'s worker", err: err}
		}
		*side.n = &labNet{w: w, ns: -1}
	}
	return l, nil
}

// nsRefusal marks the kernel's refusal of a namespace (see refusal).
type nsRefusal struct{ err error }

func (r *nsRefusal) Error() string { return r.err.Error() }
func (r *nsRefusal) Unwrap() error { return r.err }

// isRefused reports whether err is, or wraps, an nsRefusal.
func isRefused(err error) bool {
	var r *nsRefusal
	return errors.As(err, &r)
}

// newLabNet starts a worker whose thread unshares a new network namespace
// and keeps a descriptor of it (close-on-exec, so no child inherits it).
// The kernel's refusal of the unshare is an nsRefusal.
func newLabNet(name string) (*labNet, error) {
	n := &labNet{ns: -1}
	w, err := startWorker(name, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			err = os.NewSyscallError("unshare", err)
			if refusal(err) {
				return &nsRefusal{err}
			}
			return err
		}
		h, err := netns.GetFromPath("/proc/thread-self/ns/net")
		if err != nil {
			return fmt.Errorf("open /proc/thread-self/ns/net: %w", err)
		}
		n.ns = h
		var st unix.Stat_t
		if err := unix.Fstat(int(h), &st); err != nil {
			h.Close()
			return os.NewSyscallError("fstat", err)
		}
		n.id = fmt.Sprintf("net:[%d]", st.Ino)
		return nil
	})
	if err != nil {
		return nil, err
	}
	n.w = w
	return n, nil
}

func (n *labNet) close() {
	n.w.stop()
	if n.ns >= 0 {
		n.ns.Close()
	}
}

// close ends both workers (Go discards their threads) and closes the
// namespace descriptors. Call it once both processes are reaped.
func (l *lab) close() {
	l.server.close()
	l.client.close()
}

// configure brings lo up in both namespaces, creates the veth pair from
// the server's namespace with its peer in the client's, addresses and
// brings up both ends, and sets the sysctls in both. Each side's netlink
// socket is opened on its worker's thread, so it belongs to that side's
// namespace; no thread changes namespace for it.
func (l *lab) configure(sysctls map[string]string, brk string) *setupError {
	var serr *setupError
	side := func(n *labNet, f func(h *netlink.Handle) *setupError) {
		if serr != nil {
			return
		}
		err := n.w.do(func() error {
			h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
			if err != nil {
				serr = &setupError{step: "open a netlink socket in the " + n.w.name + "'s namespace", err: err}
				return nil
			}
			defer h.Close()
			serr = f(h)
			return nil
		})
		if err != nil && serr == nil {
			serr = &setupError{step: n.w.name + "'s namespace", err: err}
		}
	}
	peer := clientLink
	if brk == breakVeth {
		peer = "rl-client-name-longer-than-IFNAMSIZ" // the kernel refuses it
	}
	side(l.server, func(h *netlink.Handle) *setupError {
		if err := linkUp(h, "lo", ""); err != nil {
			return &setupError{step: "bring lo up in the server's namespace", err: err}
		}
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: serverLink},
			PeerName:      peer,
			PeerNamespace: netlink.NsFd(int(l.client.ns)),
		}
		if err := h.LinkAdd(veth); err != nil {
			return &setupError{step: "create veth", err: err}
		}
		if err := linkUp(h, serverLink, LabServerIP); err != nil {
			return &setupError{step: "configure " + serverLink, err: err}
		}
		return nil
	})
	side(l.client, func(h *netlink.Handle) *setupError {
		if err := linkUp(h, "lo", ""); err != nil {
			return &setupError{step: "bring lo up in the client's namespace", err: err}
		}
		if err := linkUp(h, clientLink, LabClientIP); err != nil {
			return &setupError{step: "configure " + clientLink, err: err}
		}
		return nil
	})
	if brk == breakSysctl {
		sysctls = maps.Clone(sysctls)
		if sysctls == nil {
			sysctls = map[string]string{}
		}
		sysctls["net.ipv4.ip_local_port_range"] = "banana" // the kernel refuses it: EINVAL
	}
	if serr != nil {
		return serr
	}
	// /proc/sys/net shows the network namespace of the thread that opens
	// the file: set each side's from its worker.
	var read [2]map[string]string
	for i, n := range []*labNet{l.server, l.client} {
		err := n.w.do(func() error {
			var err error
			read[i], err = setSysctls(sysctls)
			return err
		})
		if err != nil {
			// The kernel may refuse a sysctl of a namespace owned by a user
			// namespace (EPERM, EACCES): a lab this user may not have. A
			// value it rejects (EINVAL), or a key it lacks (ENOENT), is
			// the spec's or ours.
			var errno syscall.Errno
			denied := errors.As(err, &errno) && (errno == unix.EPERM || errno == unix.EACCES)
			return &setupError{step: "set sysctls in the " + n.w.name + "'s namespace", err: err, unavailable: denied}
		}
	}
	if !maps.Equal(read[0], read[1]) {
		return &setupError{step: "set sysctls", err: fmt.Errorf("the namespaces differ: server %v, client %v", read[0], read[1])}
	}
	l.sysctls = read[0]
	return nil
}

// linkUp adds ip/LabPrefixLen to the link (unless ip is "") and brings it
// up.
func linkUp(h *netlink.Handle, name, ip string) error {
	link, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	if ip != "" {
		a, err := netlink.ParseAddr(ip + "/" + strconv.Itoa(LabPrefixLen))
		if err != nil {
			return err
		}
		if err := h.AddrAdd(link, a); err != nil {
			return fmt.Errorf("add %s to %s: %w", a, name, err)
		}
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", name, err)
	}
	return nil
}

// setSysctls writes each sysctl through the calling thread's /proc/sys and
// reads it back; a value that does not read back as written (whitespace
// aside) is an error.
func setSysctls(m map[string]string) (map[string]string, error) {
	got := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := sysctlPath(k)
		if err := writeSysctl(p, m[k]); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", k, m[k], err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: read back: %w", k, err)
		}
		v := strings.Join(strings.Fields(string(b)), " ")
		if v != strings.Join(strings.Fields(m[k]), " ") {
			return nil, fmt.Errorf("%s: wrote %q, reads %q", k, m[k], v)
		}
		got[k] = v
	}
	return got, nil
}

// writeSysctl writes v to an existing /proc/sys file (never creating one,
// so a missing key is ENOENT, not a refusal to create).
func writeSysctl(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSysctls reads each sysctl through the calling thread's /proc/sys;
// one that cannot be read is recorded as such.
func readSysctls(m map[string]string) map[string]string {
	got := map[string]string{}
	for k := range m {
		b, err := os.ReadFile(sysctlPath(k))
		if err != nil {
			got[k] = "unreadable: " + err.Error()
			continue
		}
		got[k] = strings.Join(strings.Fields(string(b)), " ")
	}
	return got
}
