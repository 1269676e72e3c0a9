//go:build linux

package proc

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's USER_HZ is what clockTick assumes.
func TestClockTick(t *testing.T) {
	getconf, err := exec.LookPath("getconf")
	if err != nil {
		t.Skip("no getconf:", err)
	}
	out, err := exec.Command(getconf, "CLK_TCK").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "100" {
		t.Fatalf("getconf CLK_TCK = %s; clockTick assumes 100 Hz", got)
	}
}

// ThreadCPU works where the kernel has schedstat, and says why not where it
// has not.
func TestThreadCPUSelf(t *testing.T) {
	ns, err := ReadThreadCPU(os.Getpid())
	if _, serr := os.Stat("/proc/self/schedstat"); serr != nil {
		if !errors.Is(err, ErrNoSchedstat) {
			t.Fatalf("no schedstat here (%v), yet ReadThreadCPU said %d, %v", serr, ns, err)
		}
		t.Skip("kernel without schedstat")
	}
	if err != nil || ns <= 0 {
		t.Fatalf("ReadThreadCPU(self) = %d, %v", ns, err)
	}
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS <= 0 || u.Threads < 1 || u.Fds < 3 {
		t.Errorf("implausible usage of self %+v", u)
	}
}

// ReadTaskSchedstat sees a spinning thread's run time, the process's sum
// includes the thread's account, and a gone thread is an error (the
// parser's refusals are internal/procfs's tests).
func TestTaskSchedstatSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("kernel without schedstat:", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	s0, err := ReadTaskSchedstat(os.Getpid(), tid)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the thread has run 20 ms by its own CPU clock, not by the
	// wall clock: on a loaded machine 20 ms of wall time may hold far less
	// running (8.5 ms was seen beside the race-detected reactor tests).
	threadCPU := func() time.Duration {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ts.Nano())
	}
	for start := threadCPU(); threadCPU()-start < 20*time.Millisecond; {
	}
	s1, err := ReadTaskSchedstat(os.Getpid(), tid)
	if err != nil {
		t.Fatal(err)
	}
	// schedstat's run time is the same account as the thread CPU clock,
	// read at scheduler events: allow it half.
	if run := s1.RunNs - s0.RunNs; run < 10_000_000 {
		t.Errorf("ran 20 ms of thread CPU time, schedstat says %d ns", run)
	}
	all, err := ReadSchedstat(os.Getpid())
	if err != nil || all.RunNs < s1.RunNs || all.WaitNs < s1.WaitNs {
		t.Errorf("ReadSchedstat(self) = %+v, %v; one thread alone has %+v", all, err, s1)
	}
	if _, err := ReadTaskSchedstat(os.Getpid(), 1<<30); !errors.Is(err, ErrExited) {
		t.Errorf("a thread that does not exist: %v, want ErrExited", err)
	}
	if s1.Slices == 0 || all.Slices < s1.Slices {
		t.Errorf("timeslices: this thread %d, the process %d", s1.Slices, all.Slices)
	}
}

func TestCaptureBuffers(t *testing.T) {
	c := capped{max: 10}
	c.Write([]byte("0123456"))
	c.Write([]byte("789abc"))
	if b, trunc := c.bytes(); string(b) != "0123456789" || !trunc {
		t.Errorf("capped: %q %v", b, trunc)
	}
	tl := tail{max: 4}
	for _, s := range []string{"ab", "cdefghij", "k", "lm"} {
		tl.Write([]byte(s))
	}
	if got := tl.String(); got != "jklm" {
		t.Errorf("tail: %q", got)
	}
}
