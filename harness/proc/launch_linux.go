//go:build linux

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// The launcher: Start does not exec the target directly. It re-executes
// the running binary (every binary that can call Start links this package,
// so it can be its own launcher) with launcherEnv set; this package's init
// sees it before main runs and becomes the launcher, which, in the child
// and before the target's first instruction:
//
//   - sets RLIMIT_NOFILE (soft and hard) when Spec.FdLimit asks, so the
//     serving process has its limit from its first instruction on and every
//     process it forks inherits it: there is no window in which a wrapper
//     shell forks the server before a limit set from outside lands;
//   - marks every descriptor above 2 close-on-exec, so the target starts
//     with descriptors 0, 1 and 2 only, whatever this process inherited;
//   - removes launcherEnv from the environment and execs the target, which
//     keeps the launcher's pid, process group and parent-death signal.
//
// A launcher that cannot do one of these writes "reactorlab launcher: …"
// on stderr and exits with launcherFailed, so Start reports it like any
// target that exited before it listened.
const (
	launcherEnv   = "REACTORLAB_PROC_LAUNCHER"
	launcherToken = "1"
	// launcherFailed is the launcher's exit code when it cannot set up or
	// exec the target (127, as a shell's for a command not found).
	launcherFailed = 127
)

func init() {
	if os.Getenv(launcherEnv) != launcherToken {
		return
	}
	err := launch(os.Args[1:])
	fmt.Fprintf(os.Stderr, "reactorlab launcher: %v\n", err)
	os.Exit(launcherFailed)
}

// launcherArgv is the launcher's command line for argv with an fd limit
// (0: none): "nofile=N -- argv...".
func launcherArgv(self string, fdLimit uint64, argv []string) []string {
	return append([]string{self, "nofile=" + strconv.FormatUint(fdLimit, 10), "--"}, argv...)
}

// launch sets the target up and execs it; it returns only on failure.
func launch(args []string) error {
	if len(args) < 3 || !strings.HasPrefix(args[0], "nofile=") || args[1] != "--" {
		return fmt.Errorf("bad arguments %q (want nofile=N -- ARGV...)", args)
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(args[0], "nofile="), 10, 64)
	if err != nil {
		return fmt.Errorf("bad fd limit %q: %w", args[0], err)
	}
	argv := args[2:]
	if err := os.Unsetenv(launcherEnv); err != nil {
		return err
	}
	if n > 0 {
		// syscall.Setrlimit (not x/sys/unix's) also tells the runtime not
		// to restore its original soft limit at exec.
		lim := syscall.Rlimit{Cur: n, Max: n}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return fmt.Errorf("set RLIMIT_NOFILE to %d: %w", n, err)
		}
	}
	if err := closeOnExecAbove2(); err != nil {
		return err
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		if path, err = exec.LookPath(argv[0]); err != nil {
			return err
		}
	}
	err = syscall.Exec(path, argv, os.Environ())
	return fmt.Errorf("exec %s: %w", argv[0], err)
}

// closeOnExecAbove2 marks every descriptor above 2 close-on-exec:
// close_range(2) where the kernel has CLOSE_RANGE_CLOEXEC (5.11), else one
// fcntl per entry of /proc/self/fd.
func closeOnExecAbove2() error {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	fds, err := procfs.Fds(procfs.Self)
	if err != nil {
		return fmt.Errorf("listing descriptors to close: %w", err)
	}
	for _, fd := range fds {
		if fd <= 2 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("marking descriptor %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}
