//go:build linux

package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// sweepBound bounds the keeper's sweep of what the run left behind; with
// the kill of the run child it must fit in the harness's patience with a
// keeper it has told to end (the keeper's WaitDelay).
const sweepBound = time.Second

// keeperMain is the keeper, started by the harness with SIGTERM as its
// parent-death signal. It makes itself a child subreaper, reads the
// labRequest from stdin and starts the run child with it: for a lab, in
// new network, PID and mount namespaces (tried first when root), else with
// a user namespace too, mapping this uid and gid to root; for loopback, in
// the keeper's own namespaces. The run child has SIGKILL as its
// parent-death signal and the keeper's stdout and stderr. SIGINT is passed
// on to the run child, which winds the run down (Spec.Interrupt). The keeper
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
	var failures []string
	refused := true // every attempt was the kernel refusing namespaces
	for _, a := range keeperAttempts(req) {
		child, why, isRefusal := a.start(req.Loopback)
		if child == nil {
			failures, refused = append(failures, a.what+": "+why), refused && isRefusal
			continue
		}
		pid := child.cmd.Process.Pid
		out.Encode(labEvent{Started: &labStarted{Pid: pid, UserNS: a.userNS, Namespaces: childNamespaces(pid, req.ParentNS)}})
		child.stdin.Write(body) // an error shows as the child's
		child.stdin.Close()
		return child.supervise(out, intr, term)
	}
	out.Encode(labEvent{SetupError: strings.Join(failures, "; "), Unavailable: refused})
	return 1
}

// keeperAttempt is one way the keeper tries to start the run child: what
// it is called in a failure, and whether the child gets a user namespace.
type keeperAttempt struct {
	what   string
	userNS bool
}

// keeperAttempts are the ways to start the run child for req, tried in
// order until one starts: for loopback, in the keeper's own namespaces;
// for a lab, new network, PID and mount namespaces (first without a user
// namespace when root).
func keeperAttempts(req labRequest) []keeperAttempt {
	switch {
	case req.Loopback:
		return []keeperAttempt{{"start the loopback run child", false}}
	case os.Geteuid() == 0:
		return []keeperAttempt{{"clone net,pid,mnt", false}, {"clone user,net,pid,mnt", true}}
	}
	return []keeperAttempt{{"clone user,net,pid,mnt", true}}
}

// startedChild is a started run child, its stdin still open for the request,
// and release, which ends the locked thread it was forked from (see
// startLocked).
type startedChild struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	release func()
}

// start starts the run child as a says (in new namespaces unless
// loopback), with SIGKILL as its parent-death signal and the keeper's
// stdout and stderr. When it fails, the child is nil, why says why, and
// refusal whether that was the kernel refusing the namespaces
// (cloneRefused).
func (a keeperAttempt) start(loopback bool) (child *startedChild, why string, refusal bool) {
	flags := uintptr(0)
	if !loopback {
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
		return nil, err.Error(), false
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
		why, refusal := cloneRefused(flags, err)
		return nil, why, refusal
	}
	return &startedChild{cmd: cmd, stdin: stdin, release: release}, "", false
}

// supervise waits for the run child, passing SIGINT (intr) on to it and
// killing it on SIGTERM (term), then sweeps what the run left and reports
// it on out, and returns the run child's exit code.
func (c *startedChild) supervise(out *json.Encoder, intr, term <-chan os.Signal) int {
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	var err error
	killed := false
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-intr: // wind down: the run child stops its processes and reports
			c.cmd.Process.Signal(syscall.SIGINT)
		case <-term:
			c.cmd.Process.Kill()
			err, killed = <-done, true
			break wait
		}
	}
	c.release()
	// Only now: the reap above must not race with the sweep's.
	reportSweep(out, killed)
	if st := c.cmd.ProcessState; st != nil && st.ExitCode() >= 0 {
		return st.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "lab keeper: the run child: %v\n", err)
	return 1
}

// reportSweep sweeps (see sweep) and reports on out what it had to kill,
// or why it failed; after a run child the keeper killed, killing what is
// left is how the run ends, so only a failure is reported.
func reportSweep(out *json.Encoder, killed bool) {
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
		procs, err := proc.Processes()
		if err != nil {
			return killed, fmt.Errorf("sweep: %w", err)
		}
		for _, p := range procs {
			if p.PPid != self || p.State == "Z" || p.State == "X" {
				continue
			}
			name := fmt.Sprintf("%d (%s) start=%s", p.Pid, p.Comm, p.Start)
			if !seen[name] {
				seen[name] = true
				killed = append(killed, name)
			}
			unix.Kill(p.Pid, unix.SIGKILL)
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
