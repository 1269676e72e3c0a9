//go:build linux

package diagnose_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/wire"
)

func TestMain(m *testing.M) {
	runHelper()
	os.Exit(testbin.Main(m))
}

// start starts cmd as a target, waits for the line that names its
// address (the first line of its stdout or stderr holding prefix) and
// returns that line's last word, or the word after prefix when prefix
// ends in "="; the process is killed and
// reaped when the test ends.
func start(t *testing.T, cmd *exec.Cmd, prefix string) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	for _, r := range []io.Reader{out, errOut} {
		go func() {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				default:
				}
			}
		}()
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l := <-lines:
			if i := strings.Index(l, prefix); i >= 0 {
				if strings.HasSuffix(prefix, "=") {
					return strings.Fields(l[i+len(prefix):])[0]
				}
				f := strings.Fields(l)
				return f[len(f)-1]
			}
		case <-deadline:
			t.Fatalf("%v: no line with %q within 20 s", cmd.Args, prefix)
		}
	}
}

// helper starts the test binary in a helper mode, under taskset's CPU
// list when cpus is not "".
func helper(t *testing.T, mode, cpus string) (*exec.Cmd, string) {
	t.Helper()
	args := []string{os.Args[0], "-test.run=^$"}
	if cpus != "" {
		args = append([]string{"taskset", "-c", cpus}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	return cmd, start(t, cmd, "ready")
}

// diagnosed runs reactorlab diagnose on pid with --json -, and returns
// its report and exit code.
func diagnosed(t *testing.T, pid int, extra ...string) (diagnose.Report, int) {
	t.Helper()
	bin := testbin.Path(t, "cmd/reactorlab")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"diagnose", "--pid", itoa(pid), "--json", "-"}, extra...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rep diagnose.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("diagnose: exit %d, its JSON did not parse: %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	t.Logf("diagnose exit %d:\n%s", code, stderr.String())
	return rep, code
}

func itoa(n int) string { return strconv.Itoa(n) }

// classes counts the report's loop threads by class.
func classes(r diagnose.Report) map[diagnose.Class]int {
	m := map[diagnose.Class]int{}
	for _, th := range r.Threads {
		m[th.Class]++
	}
	return m
}

// signals counts the evidence lines of th that name a signal that held.
func signals(th diagnose.Thread) int {
	n := 0
	for _, e := range th.Evidence {
		if strings.HasPrefix(e, "signal (") {
			n++
		}
	}
	return n
}

// TestIdleEchoIsWaiting: examples/echo with an idle client has its
// netpoller thread waiting, no thread in another class, exit 0.
func TestIdleEchoIsWaiting(t *testing.T) {
	cmd := exec.Command(testbin.Path(t, "examples/echo"), "--listen", "127.0.0.1:0", "--lifetime", "2m")
	addr := start(t, cmd, "listening on")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, code := diagnosed(t, cmd.Process.Pid)
	got := classes(rep)
	if code != 0 || got[diagnose.Waiting] == 0 || len(got) != 1 {
		t.Errorf("exit %d, classes %v; want exit 0 and every loop thread waiting", code, got)
	}
}

// TestBusyIdleEchoIsSpinning: examples/echo --bug busy-idle with an idle
// client spins on non-blocking reads: a thread is named spinning on two
// signals, exit 1.
func TestBusyIdleEchoIsSpinning(t *testing.T) {
	cmd := exec.Command(testbin.Path(t, "examples/echo"), "--listen", "127.0.0.1:0", "--lifetime", "2m", "--bug", "busy-idle")
	addr := start(t, cmd, "listening on")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, code := diagnosed(t, cmd.Process.Pid)
	named := 0
	for _, th := range rep.Threads {
		if th.Class == diagnose.Spinning && signals(th) >= 2 {
			named++
		}
	}
	if code != 1 || named == 0 {
		t.Errorf("exit %d, classes %v, %d threads named spinning on two signals; want exit 1 and at least one", code, classes(rep), named)
	}
}

// TestEpolloutSpinIsSpinning: a loop that holds its idle connection for
// EPOLLOUT, level-triggered, is named spinning with the write-interest
// signal among its two.
func TestEpolloutSpinIsSpinning(t *testing.T) {
	cmd, addr := helper(t, "epollout-spin", "")
	c, err := dialHelper(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, code := diagnosed(t, cmd.Process.Pid)
	ok := false
	for _, th := range rep.Threads {
		if th.Class == diagnose.Spinning && signals(th) >= 2 && strings.Contains(strings.Join(th.Evidence, "\n"), "signal (write interest with nothing to send)") {
			ok = true
		}
	}
	if code != 1 || !ok {
		t.Errorf("exit %d, classes %v; want exit 1 and a thread spinning on write interest with nothing to send", code, classes(rep))
	}
}

// TestLoadedReactorIsServing: the lt reference reactor kept busy by
// clients that send DATA frames and read their echoes is serving, never
// spinning, exit 0. With two CPUs or more the server runs on CPU 0 and the
// clients on CPU 1, so that it does not wait behind its own load (on one
// CPU with them, and the other CPU busy, it waits for a CPU as long as it
// runs: starved, and so named). On a machine whose other tenants keep CPU
// 0 busy it may still be starved, as its run-queue figure says, exit 1.
func TestLoadedReactorIsServing(t *testing.T) {
	args := []string{testbin.Path(t, "cmd/reactorlab"), "serve", "--reactor", "lt", "--listen", "127.0.0.1:0", "--lifetime", "2m"}
	clientCPU := -1
	if _, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() >= 2 {
		args, clientCPU = append([]string{"taskset", "-c", "0"}, args...), 1
	}
	cmd := exec.Command(args[0], args[1:]...)
	addr := start(t, cmd, "data=")
	defer load(t, addr, clientCPU)()
	time.Sleep(200 * time.Millisecond)
	rep, code := diagnosed(t, cmd.Process.Pid)
	got := classes(rep)
	if got[diagnose.Spinning]+got[diagnose.Blocked] > 0 {
		t.Errorf("a loaded reference reactor named spinning or blocked: classes %v", got)
	}
	busiest := rep.Threads[0]
	for _, th := range rep.Threads {
		if th.Run > busiest.Run {
			busiest = th
		}
	}
	if busiest.Class != diagnose.Serving && busiest.Class != diagnose.Starved || code != min(got[diagnose.Starved], 1) {
		t.Errorf("exit %d, classes %v, the busiest loop thread %s; want it serving (or starved, exit 1)", code, got, busiest.Class)
	}
	if busiest.Class == diagnose.Starved {
		t.Logf("the loop thread was starved: %q", busiest.Evidence)
	}
}

// load keeps addr busy with 4 clients, each writing 16 DATA frames of 512
// bytes and reading their echoes back, again and again, each on a thread
// of its own pinned to cpu (unless cpu is -1); the function it returns
// stops them and waits for them.
func load(t *testing.T, addr string, cpu int) func() {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			if cpu >= 0 {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					t.Error(err)
					return
				}
			}
			payload := make([]byte, 512)
			frame := wire.AppendFrame(nil, wire.KindData, 0, uint64(k+1), 0, 0, payload)
			buf := make([]byte, 64<<10)
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				batch := bytes.Repeat(frame, 16)
				if _, err := c.Write(batch); err != nil {
					return
				}
				if _, err := io.ReadFull(c, buf[:len(batch)]); err != nil {
					return
				}
			}
		}()
	}
	return func() { close(stop); wg.Wait() }
}

// TestLoadedEchoIsNotBlocked: examples/echo under the same load, whose
// idle runtime threads park in futex while the epoll set they share holds
// unread bytes for another thread, is not named blocked, nor spinning. A
// thread may be starved: the load's clients, the server and the rest of a
// shared machine ask for more CPUs than it has, and the run-queue figure
// says so (exit 1 then, and only then).
func TestLoadedEchoIsNotBlocked(t *testing.T) {
	cmd := exec.Command(testbin.Path(t, "examples/echo"), "--listen", "127.0.0.1:0", "--lifetime", "2m")
	addr := start(t, cmd, "listening on")
	defer load(t, addr, -1)()
	time.Sleep(200 * time.Millisecond)
	rep, code := diagnosed(t, cmd.Process.Pid)
	got := classes(rep)
	if got[diagnose.Blocked]+got[diagnose.Spinning] > 0 || code != min(got[diagnose.Starved], 1) {
		t.Errorf("exit %d, classes %v; want none blocked or spinning, exit 1 only with a thread starved", code, got)
	}
}

// TestSleepingLoopIsBlocked: a loop that sleeps in nanosleep between its
// waits while its client's bytes wait unread is named blocked, in
// nanosleep, exit 1.
func TestSleepingLoopIsBlocked(t *testing.T) {
	cmd, addr := helper(t, "sleep-loop", "")
	c, err := dialHelper(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	rep, code := diagnosed(t, cmd.Process.Pid)
	ok := false
	for _, th := range rep.Threads {
		if th.Class == diagnose.Blocked && strings.Contains(strings.Join(th.Evidence, "\n"), "held in nanosleep") {
			ok = true
		}
	}
	if code != 1 || !ok {
		t.Errorf("exit %d, classes %v; want exit 1 and a thread blocked in nanosleep", code, classes(rep))
	}
}

// TestLoopBesideBurnersIsStarved: a loop that waits for its events a
// moment (the samples see it in its wait: a loop thread, whatever CPU it
// gets), then wants a CPU all the time, pinned to one CPU beside two
// threads that burn it, waits on the run queue at least as long as it
// runs (it gets a third of the CPU at most, and waits two thirds):
// starved, exit 1. The burner's GOMAXPROCS is set: under taskset Go would take
// it from the one CPU allowed, and its locked threads would then take
// turns on one P, burning one thread's worth between them.
func TestLoopBesideBurnersIsStarved(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset and two CPUs")
	}
	burn := exec.Command("taskset", "-c", "1", testbin.Path(t, "examples/burn"), "--cpus", "2", "--for", "1m")
	burn.Env = append(os.Environ(), "GOMAXPROCS=3")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { burn.Process.Kill(); burn.Wait() }()
	cmd, _ := helper(t, "timer-work", "1")
	rep, code := diagnosed(t, cmd.Process.Pid)
	if got := classes(rep); code != 1 || got[diagnose.Starved] == 0 || got[diagnose.Spinning] > 0 {
		t.Errorf("exit %d, classes %v; want exit 1 and a thread starved, none spinning", code, got)
	}
}

// TestZeroTimeoutWaitIsNotSeen: a loop polling with a zero timeout is
// never seen in its wait (a wait that does not sleep is "running" in
// /proc/TID/syscall), so its only spin signal is that its waits did not
// block: it is serving (busy), never named spinning on one signal; or, on
// a machine that keeps it waiting for a CPU as long as it runs, starved,
// as its run-queue figure says (exit 1 then).
func TestZeroTimeoutWaitIsNotSeen(t *testing.T) {
	cmd, _ := helper(t, "zero-timeout", "")
	rep, code := diagnosed(t, cmd.Process.Pid)
	if len(rep.Threads) == 0 {
		t.Fatal("no loop thread")
	}
	busiest := rep.Threads[0]
	for _, th := range rep.Threads {
		for w, to := range th.WaitTimeouts {
			if strings.HasPrefix(to, "0 ") || strings.HasPrefix(to, "0.") {
				t.Errorf("thread %d seen in %s with a zero timeout: %v", th.Tid, w, th.WaitTimeouts)
			}
		}
		if th.Run > busiest.Run {
			busiest = th
		}
	}
	spinSignals := 0
	for _, e := range busiest.Evidence {
		if strings.HasPrefix(e, "signal (") && !strings.HasPrefix(e, "signal (run-queue wait)") {
			spinSignals++
		}
	}
	want := min(classes(rep)[diagnose.Starved], 1)
	if busiest.Class != diagnose.Serving && busiest.Class != diagnose.Starved || busiest.InWait != 0 || spinSignals != 0 || code != want {
		t.Errorf("the polling thread %d: %s, in a wait in %d samples, exit %d, evidence %q; want serving (or starved, exit 1), never seen in its wait, no spin signal named", busiest.Tid, busiest.Class, busiest.InWait, code, busiest.Evidence)
	}
}

// TestSelfWakingLoopIsWakingItself: a loop whose second thread writes
// its eventfd 10,000 times a second with nothing to do, one client
// connected and idle, is named waking itself on both signals (woken for
// nothing, tokens from its own threads), exit 1; the thread that writes
// the tokens is no loop thread (never in a wait, under a tenth of the
// window's CPU) and is not judged.
func TestSelfWakingLoopIsWakingItself(t *testing.T) {
	cmd, addr := helper(t, "self-wake", "")
	c, err := dialHelper(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, code := diagnosed(t, cmd.Process.Pid, "--for", "1s")
	ok := false
	for _, th := range rep.Threads {
		ev := strings.Join(th.Evidence, "\n")
		if th.Class == diagnose.WakingItself && strings.Contains(ev, "signal (woken for nothing)") && strings.Contains(ev, "signal (tokens from its own threads)") {
			ok = true
		}
	}
	if code != 1 || !ok {
		t.Errorf("exit %d, classes %v; want exit 1 and a thread waking itself on both signals", code, classes(rep))
	}
}

// TestHandedOffWorkIsNotWakingItself: a worker woken by its poller's
// eventfd token once per read, its own epoll set holding no socket, under
// the tests' load, is not named waking itself: its wakeups are held to the
// segments every socket of the process received, and carry work.
func TestHandedOffWorkIsNotWakingItself(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs in the full tier")
	}
	cmd, addr := helper(t, "handoff", "")
	defer load(t, addr, -1)()
	time.Sleep(300 * time.Millisecond)
	rep, _ := diagnosed(t, cmd.Process.Pid, "--for", "1s")
	worker := false
	for _, th := range rep.Threads {
		if th.Class == diagnose.WakingItself {
			t.Errorf("thread %d named waking itself: %q", th.Tid, th.Evidence)
		}
		worker = worker || th.SegmentsOfProcess && len(th.TokenFds) > 0
	}
	if !worker {
		t.Errorf("no loop thread whose set holds only tokens (the worker): classes %v", classes(rep))
	}
}

// TestFullTableAcceptIsSpinning: a loop whose descriptor table is full,
// its listener held level-triggered for EPOLLIN with three connections
// queued, spins on accepts that fail with EMFILE: it is named spinning
// with the accept signal among its two, the listener and the table's
// figures named, exit 1. The same loop that takes its listener out of
// its set on EMFILE (and tries again 100 ms later) is not: no thread of
// it spins, and the accept signal does not hold.
func TestFullTableAcceptIsSpinning(t *testing.T) {
	for _, tc := range []struct {
		mode string
		spin bool
	}{{"emfile-spin", true}, {"emfile-shed", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			cmd, addr := helper(t, tc.mode, "")
			for range 3 {
				c, err := dialHelper(addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
			}
			rep, code := diagnosed(t, cmd.Process.Pid, "--for", "500ms")
			_, port, _ := net.SplitHostPort(addr)
			want := "signal (accept failing for want of descriptors): listener 127.0.0.1:" + port + " with 3 queued, "
			named := false
			for _, th := range rep.Threads {
				ev := strings.Join(th.Evidence, "\n")
				if strings.Contains(ev, "signal (accept failing for want of descriptors)") {
					named = true
					if !tc.spin || th.Class != diagnose.Spinning || signals(th) < 2 || !strings.Contains(ev, want) || !strings.Contains(ev, " of "+itoa(emfileLimit)+" descriptors open") {
						t.Errorf("thread %d (%s) names the accept signal: %q", th.Tid, th.Class, th.Evidence)
					}
				}
			}
			if tc.spin && (code != 1 || !named) {
				t.Errorf("exit %d, classes %v; want exit 1 and a thread spinning on accept failing for want of descriptors", code, classes(rep))
			}
			// The shedding loop's exit is not held to 0: on a shared
			// machine a thread of it may wait for a CPU as long as it
			// runs, starved, a finding of its own.
			if !tc.spin && (code == 2 || classes(rep)[diagnose.Spinning] > 0) {
				t.Errorf("exit %d, classes %v; want a report and no thread spinning", code, classes(rep))
			}
		})
	}
}

// TestReadableNeverReadIsSpinning: a loop that holds its connection
// level-triggered for EPOLLIN and never reads it, its client's 4 KiB
// sent once and left in the receive queue, is named spinning with the
// readable-and-never-read signal among its two, the connection's ends,
// descriptor and 4096 unread bytes named, exit 1. The same loop that
// reads what each wait reports, its client writing all the while (so
// that its receive queue often holds bytes when looked at, and what
// tells it from the spin is that they are read), does not name the
// signal, and no thread of it spins.
func TestReadableNeverReadIsSpinning(t *testing.T) {
	for _, tc := range []struct {
		mode string
		spin bool
	}{{"unread-spin", true}, {"unread-read", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			cmd, addr := helper(t, tc.mode, "")
			c, err := dialHelper(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(make([]byte, 4096)); err != nil {
				t.Fatal(err)
			}
			if !tc.spin {
				done := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					chunk := make([]byte, 16<<10)
					for {
						select {
						case <-done:
							return
						default:
						}
						c.SetWriteDeadline(time.Now().Add(time.Second))
						if _, err := c.Write(chunk); err != nil {
							return
						}
					}
				}()
				defer func() { close(done); wg.Wait() }()
			}
			rep, code := diagnosed(t, cmd.Process.Pid, "--for", "500ms")
			want := "signal (readable and never read): connection " + addr + "→" + c.LocalAddr().String() + " (fd "
			named := false
			for _, th := range rep.Threads {
				ev := strings.Join(th.Evidence, "\n")
				if strings.Contains(ev, "signal (readable and never read)") {
					named = true
					if !tc.spin || th.Class != diagnose.Spinning || signals(th) < 2 || !strings.Contains(ev, want) || !strings.Contains(ev, " held 4096 unread bytes, 0 read since it was made") {
						t.Errorf("thread %d (%s) names the signal: %q", th.Tid, th.Class, th.Evidence)
					}
				}
			}
			if tc.spin && (code != 1 || !named) {
				t.Errorf("exit %d, classes %v; want exit 1 and a thread spinning on a connection readable and never read", code, classes(rep))
			}
			// The reading loop's exit is not held to 0: on a shared
			// machine it may wait for a CPU as long as it runs, starved.
			if !tc.spin && (code == 2 || classes(rep)[diagnose.Spinning] > 0) {
				t.Errorf("exit %d, classes %v; want a report and no thread spinning", code, classes(rep))
			}
		})
	}
}

// TestUsageErrors: a pid that does not exist, and a window of 0 or over
// 60 s, are refused with exit 2 naming the flag.
func TestUsageErrors(t *testing.T) {
	bin := testbin.Path(t, "cmd/reactorlab")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no true to run:", err)
	}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--pid", itoa(gone.Process.Pid)}, "--pid"},
		{[]string{"--pid", itoa(os.Getpid()), "--for", "0"}, "--for"},
		{[]string{"--pid", itoa(os.Getpid()), "--for", "61s"}, "--for"},
		{[]string{"--for", "1s"}, "--pid"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"diagnose"}, c.args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), c.flag) || stdout.Len() != 0 {
			t.Errorf("diagnose %v: %v, stdout %q, stderr %q; want exit 2 naming %s", c.args, err, stdout.String(), stderr.String(), c.flag)
		}
	}
}

// TestAnotherUsersProcessIsSaid: diagnose run as another user (nobody)
// on this user's process cannot read its threads' system calls and io:
// it says so, naming the want of privilege, judges nothing, exit 1.
func TestAnotherUsersProcessIsSaid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run diagnose as nobody")
	}
	dir, err := os.MkdirTemp("", "diagnose-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := dir + "/reactorlab"
	b, err := os.ReadFile(testbin.Path(t, "cmd/reactorlab")) // its directory is this user's alone
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, _ := helper(t, "sleep-loop", "")
	var stdout, stderr bytes.Buffer
	d := exec.Command(bin, "diagnose", "--pid", itoa(cmd.Process.Pid), "--for", "300ms", "--json", "-")
	d.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	d.Stdout, d.Stderr = &stdout, &stderr
	err = d.Run()
	ee, ok := err.(*exec.ExitError)
	var rep diagnose.Report
	if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil {
		t.Fatalf("diagnose as nobody: %v; JSON: %v\nstderr:\n%s", err, jerr, stderr.String())
	}
	said := strings.Join(rep.Unreadable, "\n")
	if !ok || ee.ExitCode() != 1 || rep.Sampled != 0 || !strings.Contains(said, "syscall") || !strings.Contains(said, "permission denied (a process of another user") ||
		!strings.Contains(stderr.String(), "nothing judged") {
		t.Errorf("diagnose as nobody: %v, sampled %d, unreadable %q, stderr:\n%s\nwant exit 1, nothing sampled, the syscall file named unreadable for want of privilege", err, rep.Sampled, rep.Unreadable, stderr.String())
	}
}
