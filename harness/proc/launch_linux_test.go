//go:build linux

package proc

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The fd limit is in force from the target's first instruction, in every
// process it forks: a wrapper shell that forks the server before any
// outside prlimit could land passes it on (TestFdLimit checks the leader).
// The race it closes was lost 8 times in 20: the full tier starts 20
// wrappers to catch its return; -short starts one, which shows the limit
// passed on.
func TestFdLimitReachesForkedServer(t *testing.T) {
	noLeaks(t)
	starts := 20
	if testing.Short() {
		starts = 1
	}
	for i := 0; i < starts; i++ {
		// A compound command: the shell forks the first command at once.
		p := mustStart(t, Spec{Argv: []string{"sh", "-c", `grep "Max open files" /proc/self/limits; sleep 0.05`}, NoListen: true, FdLimit: 48})
		<-p.Done()
		e := mustStop(t, p)
		if f := strings.Fields(string(e.Stdout)); len(f) < 5 || f[3] != "48" || f[4] != "48" {
			t.Fatalf("start %d: the forked command's limits line %q, want soft and hard 48", i, e.Stdout)
		}
	}
}

// A target starts with descriptors 0, 1 and 2 only, though this process
// holds one it could inherit (no close-on-exec flag).
func TestTargetGetsStdioOnly(t *testing.T) {
	noLeaks(t)
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil { // no O_CLOEXEC
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	if _, err := unix.FcntlInt(uintptr(fds[1]), unix.F_GETFD, 0); err != nil {
		t.Fatal(err)
	}
	p := mustStart(t, Spec{Argv: []string{"sh", "-c", `cd /proc/self/fd && echo *`}, NoListen: true})
	<-p.Done()
	e := mustStop(t, p)
	// The shell's own fds, plus the one `echo *`'s directory listing uses.
	got := strings.Fields(string(e.Stdout))
	for _, fd := range got {
		if fd == fmt.Sprint(fds[0]) || fd == fmt.Sprint(fds[1]) {
			t.Errorf("the target inherited descriptor %s of this process: it has %v", fd, got)
		}
	}
	if len(got) > 4 {
		t.Errorf("the target has descriptors %v, want 0, 1, 2 (and the listing's own)", got)
	}
}

// A launcher that cannot exec the target fails Start like a target that
// exits at once, naming the program.
func TestLauncherReportsExecFailure(t *testing.T) {
	noLeaks(t)
	_, err := Start(t.Context(), Spec{Argv: []string{"/nonexistent/server"}, Ready: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/server") || !strings.Contains(err.Error(), "reactorlab launcher") {
		t.Errorf("Start of a missing program: %v, want the launcher's error naming it", err)
	}
}

// A process of the group that exits before Stop is listed with how it
// ended; the leader's own exit before Stop is flagged.
func TestDeparted(t *testing.T) {
	noLeaks(t)
	// The shell stays (compound command); the server behind it exits by
	// itself 200 ms after it listens.
	p := mustStart(t, Spec{Argv: []string{"sh", "-c", echoBin + " --lifetime 200ms; sleep 30"}})
	deadline := time.Now().Add(5 * time.Second)
	for len(p.Departed()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	e := mustStop(t, p)
	if len(e.Departed) != 1 || !strings.Contains(e.Departed[0].Command, "echo") {
		t.Fatalf("departed %v, want the echo server behind the shell", e.Departed)
	}
	if e.ExitedBeforeStop {
		t.Errorf("the shell (leader) was stopped, but ExitedBeforeStop is set")
	}
	t.Logf("departed: %v", e.Departed[0])

	p = mustStart(t, Spec{Argv: []string{echoBin, "--lifetime", "100ms"}})
	<-p.Done()
	e = mustStop(t, p)
	if !e.ExitedBeforeStop || len(e.Departed) != 1 || e.Departed[0].Status != "exit status 0" {
		t.Errorf("a leader that exited by itself: before stop %v, departed %v", e.ExitedBeforeStop, e.Departed)
	}

	p = mustStart(t, Spec{Argv: []string{echoBin}})
	e = mustStop(t, p)
	if e.ExitedBeforeStop || len(e.Departed) != 0 {
		t.Errorf("a target that ran until stopped: before stop %v, departed %v", e.ExitedBeforeStop, e.Departed)
	}
}
