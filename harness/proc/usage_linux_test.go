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
// includes the thread's account, and bad lines and gone threads are errors.
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
	for _, bad := range []string{"", "12", "x 3 4", "12 y 4", "12 3 z"} {
		if s, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q) = %+v, want an error", bad, s)
		}
	}
	if s, err := parseSchedstat([]byte("123 456 7\n")); err != nil || s != (Schedstat{RunNs: 123, WaitNs: 456, Slices: 7}) {
		t.Errorf("parseSchedstat = %+v, %v", s, err)
	}
	if s, err := parseSchedstat([]byte("123 456\n")); err != nil || s != (Schedstat{RunNs: 123, WaitNs: 456}) {
		t.Errorf("parseSchedstat without timeslices = %+v, %v", s, err)
	}
	if s1.Slices == 0 || all.Slices < s1.Slices {
		t.Errorf("timeslices: this thread %d, the process %d", s1.Slices, all.Slices)
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses; utime 250, stime 7 ticks.
	line := "1234 (a b) (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 7 0 0 20 0 3 0 99 1000 50 0\n"
	u, zombie, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if u.UserNs != 2_500_000_000 || u.SysNs != 70_000_000 || zombie {
		t.Errorf("got %+v zombie=%v", u, zombie)
	}
	if _, zombie, _ := parseStat([]byte("9 (x) Z 1 9 9 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0 0")); !zombie {
		t.Error("state Z not seen as a zombie")
	}
	if _, _, err := parseStat([]byte("9 (x) S 1 2")); err == nil {
		t.Error("short line accepted")
	}
}

func TestParseStatus(t *testing.T) {
	var u Usage
	err := parseStatus([]byte("Name:\techo\nVmHWM:\t    8000 kB\nVmRSS:\t    6000 kB\nThreads:\t5\n"), &u)
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS != 6000<<10 || u.PeakRSS != 8000<<10 || u.Threads != 5 {
		t.Errorf("got %+v", u)
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
