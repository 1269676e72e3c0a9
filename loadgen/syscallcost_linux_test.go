//go:build linux

package loadgen_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syscallCounts is what the kernel counts for a whole process (every
// thread, the Go runtime's included), free of any tracing overhead: the
// read and write system calls (/proc/<pid>/io syscr and syscw: read, readv,
// pread and the like, and write, writev and the like; not recvfrom, sendto,
// epoll_wait) and the voluntary context switches summed over its threads
// (/proc/<pid>/task/*/status), which count the times a thread blocked and
// slept: a blocking epoll_wait that slept, a futex wait, sysmon's nanosleep.
// A blocking wait that finds events at once, and a zero-timeout poll, are
// in neither count (their cost shows only as system time). The calls of
// a thread that ended are kept in the process's counts, its switches only by
// selfSyscallCounts.
type syscallCounts struct {
	Reads, Writes, Sleeps int64
}

// sub returns c - o, field by field.
func (c syscallCounts) sub(o syscallCounts) syscallCounts {
	return syscallCounts{Reads: c.Reads - o.Reads, Writes: c.Writes - o.Writes, Sleeps: c.Sleeps - o.Sleeps}
}

// add returns c + o, field by field.
func (c syscallCounts) add(o syscallCounts) syscallCounts {
	return syscallCounts{Reads: c.Reads + o.Reads, Writes: c.Writes + o.Writes, Sleeps: c.Sleeps + o.Sleeps}
}

// report reports c per frame as side's metrics ("gen-reads/frame" …).
func (c syscallCounts) report(b *testing.B, side string, frames float64) {
	b.ReportMetric(float64(c.Reads)/frames, side+"-reads/frame")
	b.ReportMetric(float64(c.Writes)/frames, side+"-writes/frame")
	b.ReportMetric(float64(c.Sleeps)/frames, side+"-sleeps/frame")
}

// readSyscallCounts reads pid's counts (see syscallCounts), the sleeps of
// its living threads only.
func readSyscallCounts(pid int) (syscallCounts, error) {
	c, err := readIOCounts(pid)
	if err != nil {
		return c, err
	}
	dir := "/proc/" + strconv.Itoa(pid)
	tasks, err := filepath.Glob(dir + "/task/*/status")
	if err != nil || len(tasks) == 0 {
		return c, fmt.Errorf("%s/task: no threads (%v)", dir, err)
	}
	for _, path := range tasks {
		st, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue // the thread exited after the listing
		}
		if err != nil {
			return c, err
		}
		n, err := procField(st, "voluntary_ctxt_switches:")
		if err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
		c.Sleeps += n
	}
	return c, nil
}

// selfSyscallCounts is readSyscallCounts of this process, with the sleeps
// of every thread it ran, the ended ones too (getrusage): the generator's
// loop threads end with its Run.
func selfSyscallCounts() (syscallCounts, error) {
	c, err := readIOCounts(os.Getpid())
	if err != nil {
		return c, err
	}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return c, os.NewSyscallError("getrusage", err)
	}
	c.Sleeps = ru.Nvcsw
	return c, nil
}

// readIOCounts reads pid's read and write calls from /proc/<pid>/io, which
// counts those of every thread the process ran; Sleeps is left 0.
func readIOCounts(pid int) (syscallCounts, error) {
	var c syscallCounts
	path := "/proc/" + strconv.Itoa(pid) + "/io"
	io, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if c.Reads, err = procField(io, "syscr:"); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	if c.Writes, err = procField(io, "syscw:"); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// procField returns the integer after name at the start of a line of a
// /proc file ("syscr: 123").
func procField(b []byte, name string) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(name)); ok {
			return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %q line", name)
}

// TestSyscallCountsSeeTheCalls: the counts move by the read and write
// calls this process makes and by the sleeps of one of its threads, and by
// little else (other threads of the test binary make a few calls and sleeps
// of their own meanwhile); selfSyscallCounts keeps the sleeps of a thread
// that has ended.
func TestSyscallCountsSeeTheCalls(t *testing.T) {
	const calls, sleeps, slack, sleepSlack = 200, 50, 100, 1000
	fd, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// Both readings: of the living threads, and of every thread.
	read := func() (living, every syscallCounts) {
		t.Helper()
		living, err := readSyscallCounts(os.Getpid())
		if err == nil {
			every, err = selfSyscallCounts()
		}
		if err != nil {
			t.Fatal(err)
		}
		return living, every
	}
	before, selfBefore := read()
	tid := onEndingThread(func() {
		buf := make([]byte, 8)
		for range calls {
			unix.Write(fd, buf)
		}
		for range 2 * calls {
			unix.Read(fd, buf)
		}
		for range sleeps {
			// A blocking nanosleep of this locked thread: one voluntary switch.
			unix.Nanosleep(&unix.Timespec{Nsec: int64(100 * time.Microsecond)}, nil)
		}
	})
	// The runtime ends the locked thread after the goroutine returns: wait
	// until it has gone from /proc, so that "every thread" counts an
	// ended thread.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("thread %d (pid %d) still in /proc/self/task 5 s after its goroutine ended", tid, os.Getpid())
		}
	}
	after, selfAfter := read()
	d, ds := after.sub(before), selfAfter.sub(selfBefore)
	t.Logf("living threads: %+v; every thread: %+v", d, ds)
	// The reads of the /proc files themselves are reads too (a few).
	for _, c := range []syscallCounts{d, ds} {
		if c.Writes < calls || c.Writes > calls+slack || c.Reads < 2*calls || c.Reads > 2*calls+slack {
			t.Errorf("counted %+v for %d writes and %d reads (slack %d)", c, calls, 2*calls, slack)
		}
	}
	// Every thread of the process sleeps: the runtime's idle Ms park on
	// futexes, more of them on a busy machine (213 for 50 once, with the
	// other core busy). The bound above only says the count is of sleeps,
	// not of every switch or of every call.
	if ds.Sleeps < sleeps || ds.Sleeps > sleeps+sleepSlack {
		t.Errorf("counted %d sleeps for %d of a thread that has ended (slack %d)", ds.Sleeps, sleeps, sleepSlack)
	}
	if _, err := readSyscallCounts(-1); err == nil {
		t.Error("pid -1: no error")
	}
}

// onEndingThread runs f on a locked thread that ends with it and returns
// the thread's id once f has returned. Go never ends the main thread (a
// goroutine that exits locked to it wedges it instead), so a goroutine
// that finds itself there keeps it locked while f runs on another.
func onEndingThread(f func()) int {
	tidc := make(chan int, 1)
	var run func()
	run = func() {
		runtime.LockOSThread() // unlocked only on the main thread: any other ends with the goroutine
		if unix.Gettid() == unix.Getpid() {
			done := make(chan struct{})
			go func() { run(); close(done) }() // not on this thread, which this goroutine holds
			<-done
			runtime.UnlockOSThread()
			return
		}
		f()
		tidc <- unix.Gettid()
	}
	finished := make(chan struct{})
	go func() { run(); close(finished) }()
	<-finished
	return <-tidc
}
