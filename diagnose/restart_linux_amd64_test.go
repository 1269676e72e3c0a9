//go:build linux && amd64

package diagnose_test

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/diagnose"
)

func init() { archHelpers["poll-wait"] = pollWait }

// pollWait is a loop that waits in poll(2) itself (not ppoll, which
// x/sys/unix's Poll calls), with no timeout, on an eventfd nothing
// writes: it waits, and nothing else.
func pollWait() error {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return err
	}
	fmt.Println("ready -")
	fds := []unix.PollFd{{Fd: int32(efd), Events: unix.POLLIN}}
	for {
		_, _, errno := unix.Syscall(unix.SYS_POLL, uintptr(unsafe.Pointer(&fds[0])), 1, ^uintptr(0))
		if errno != 0 && errno != unix.EINTR {
			return errno
		}
	}
}

// TestRestartedPollIsWaiting: a loop in poll(2) that was stopped and
// continued is resumed by restart_syscall, which /proc/TID/syscall shows
// in its place (as it does for a loop that sleeps in poll on its ring's
// eventfd while io_uring runs completions in the thread); its wait channel
// says poll's, and it is a loop thread waiting in "poll (restarted)",
// exit 0, never a thread in "system call 219".
func TestRestartedPollIsWaiting(t *testing.T) {
	cmd := restartedPoll(t)
	rep, code := diagnosed(t, cmd.Process.Pid, "--for", "300ms")
	ok := false
	for _, th := range rep.Threads {
		if th.Class == diagnose.Waiting && th.WaitCalls["poll (restarted)"] > 0 && th.InWait == th.Samples {
			ok = true
		}
		for c := range th.InCall {
			if strings.HasPrefix(c, "system call ") {
				t.Errorf("thread %d in %q: %v", th.Tid, c, th.InCall)
			}
		}
	}
	if code != 0 || !ok {
		t.Errorf("exit %d, classes %v; want exit 0 and a thread waiting in poll (restarted) in every sample", code, classes(rep))
	}
}

// TestTimesRestartedPollIsWaiting: the same loop, in its account of loop
// time, is a loop thread waiting nearly all the window, never blocked in
// restart_syscall.
func TestTimesRestartedPollIsWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("a live process sampled for 300 ms")
	}
	cmd := restartedPoll(t)
	lt, _ := timesOf(t, cmd.Process.Pid, 300*time.Millisecond)
	l := loopThread(t, lt, cmd.Process.Pid)
	if call, share := l.TopBlocked(); l.Waiting < 0.9 || share > 0 {
		t.Errorf("the polling thread: %+v, held most in %q (%.2f); want waiting ≥ 9/10 of the window, blocked in nothing", l, call, share)
	}
}

// restartedPoll starts the poll-wait helper, then stops and continues it
// (the test does; diagnose never signals): its poll is then resumed by
// restart_syscall.
func restartedPoll(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd, _ := helper(t, "poll-wait", "")
	time.Sleep(50 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	return cmd
}
