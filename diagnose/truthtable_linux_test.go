//go:build linux

package diagnose_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/peertruth"
	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/internal/inetdiag"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/wire"
)

// The loads a truth-table row runs under. Each is applied to a target
// that has run the loads before it (idle, then steady, then saturating),
// its clients closed in between.
const (
	// idle: one client connected, sending nothing.
	idle = "idle"
	// steady: 4 clients, each sending a 512-byte frame every 8 ms (500
	// frames a second in all) and reading the echoes: light load, which
	// costs a correct loop well under a tenth of a CPU (100 µs a frame,
	// an interpreter's cost, is 5%).
	steady = "steady"
	// saturating: 4 clients, each writing 16 frames of 512 bytes and
	// reading their echoes back, again and again: as much as the server
	// takes.
	saturating = "saturating"
	// oneWrite: one client that writes 4 KiB once and reads nothing: the
	// load of a helper that never reads, or sleeps while bytes wait.
	oneWrite = "one write"
)

var loads = []string{idle, steady, saturating}

// none is the verdict of a process with no loop thread.
const none diagnose.Class = "no loop thread"

// expectation is a row's expected class and why, written from what the
// program does before it is diagnosed.
type expectation struct {
	class diagnose.Class
	why   string
}

// A correct server, or one whose bug the load does not reach: waiting when
// idle and under light load, serving under saturating load.
func correct(why string) map[string]expectation {
	return map[string]expectation{
		idle:       {diagnose.Waiting, "nothing to do: it waits in its event wait; " + why},
		steady:     {diagnose.Waiting, "500 frames a second take well under a tenth of a CPU: it mostly waits; " + why},
		saturating: {diagnose.Serving, "it does work as fast as it can, and its waits find work: serving, never spinning; " + why},
	}
}

// all is the same expectation under every load.
func all(c diagnose.Class, why string) map[string]expectation {
	return map[string]expectation{idle: {c, why}, steady: {c, why}, saturating: {c, why}}
}

// with is e with load's expectation replaced.
func with(e map[string]expectation, load string, c diagnose.Class, why string) map[string]expectation {
	out := map[string]expectation{}
	for k, v := range e {
		out[k] = v
	}
	out[load] = expectation{c, why}
	return out
}

// truthTarget is one program of the truth table: how to start it, what
// it is, and the class each load should earn it.
type truthTarget struct {
	group, name string
	// start returns the command, started with REACTORLAB_LISTEN set to
	// the address it must listen on; it is run in its own process group.
	argv   []string
	dir    string
	env    []string
	expect map[string]expectation
	// loads, when set, are the only loads run (a helper that serves one
	// connection).
	loads []string
	// skip says why the target cannot be run here ("" when it can).
	skip string
}

// mutantExpect is what each reactor mutant does under these loads: most
// break a contract only in a state these loads never reach (a slow
// reader, EMFILE, a stop, a fragment), and behave as the correct design
// meanwhile.
var mutantExpect = map[string]map[string]expectation{
	"missed-rearm":       all(diagnose.Waiting, "every 7th turn leaves a connection unarmed for good: within a second every connection of the load has stalled and the loop has nothing to do"),
	"permanent-epollout": all(diagnose.Spinning, "EPOLLOUT stays registered, level-triggered, with an empty out-queue: every wait returns at once, whatever the load"),
}

// mutantUnreached says, per mutant that behaves as its design under these
// loads, what state would show its bug.
var mutantUnreached = map[string]string{
	"no-drain":                 "work stranded behind a budget leaves the loop waiting",
	"fd-identity":              "misrouted results are a correctness bug, not a loop state",
	"no-budget":                "serving one source long is serving",
	"unbounded-outq":           "needs a client that does not read",
	"lost-wakeup":              "stranded results leave the loop waiting, its tokens one per result",
	"no-frame-limit":           "needs an oversized header",
	"drop-partial":             "needs a fragmented frame at a turn's end",
	"limit-off-by-one":         "needs a frame of exactly the maximum size",
	"drop-short-write":         "needs a short write (a client that does not read)",
	"accept-once-et":           "needs a storm of connections",
	"no-emfile-shed":           "spins only while the descriptor table is full",
	"leak-pending":             "needs a connection gone with work pending",
	"silent-after-stop":        "needs a STOP",
	"stop-when-idle":           "needs a STOP",
	"free-at-eof":              "needs an EOF with echoes queued",
	"flush-spin-at-eof":        "spins only after an EOF with echoes queued",
	"block-on-full-write":      "blocks only on a client that does not read",
	"admission-ignored":        "needs an admission limit past saturation",
	"handoff-drop-when-full":   "needs a full ingress",
	"serve-on-two-loops":       "two loops reading one socket still do the work",
	"fd-identity-across-loops": "misrouted results are a correctness bug, not a loop state",
	"no-accept-coordination":   "the herd wakes on new connections only; these clients connect before the window",
	"stop-wakes-one-loop":      "needs a STOP",
	"uring-enobufs-eof":        "needs a burst larger than the 16 receive buffers of 4 KiB: these loads keep at most 32 KiB in flight (4 clients, 16 frames of 512 bytes each), 8 buffers",
	"uring-overflow-ignored":   "needs more than 16 completions pending at once: these loads keep about 3 per connection (a receive buffer or two, a send), 12 for 4 connections",
	"uring-close-no-cancel":    "needs a connection closed with its receive armed and its descriptor number reused by a new connection",
}

// echoExpect is what each examples/echo --bug mode does under these
// loads.
var echoExpect = map[string]map[string]expectation{
	"busy-idle": all(diagnose.Spinning, "each connection's goroutine spins on non-blocking reads whenever its connection has nothing unread, under any load"),
}

// echoUnreached says, per echo bug that behaves as the plain echo under
// these loads, what state would show it.
var echoUnreached = map[string]string{
	"no-backpressure":      "needs a client that does not read",
	"leak-on-close":        "needs a client that closes",
	"drop-partial":         "needs a fragmented frame",
	"exit-on-emfile":       "needs a full descriptor table",
	"free-at-eof":          "needs an EOF with echoes queued",
	"slow-control":         "needs a control connection",
	"rst-on-term":          "needs a SIGTERM",
	"close-at-fin-on-term": "needs a SIGTERM",
	"drop-on-term":         "needs a SIGTERM",
	"keep-conns-on-term":   "needs a SIGTERM",
	"serve-after-term":     "needs a SIGTERM",
	"herd":                 "the herd wakes on new connections only; these clients connect before the window",
	"herd-poll":            "the herd wakes on new connections only; these clients connect before the window",
	"drop-short-write":     "needs a short write (a client that does not read)",
	"crash-at-stop":        "needs a SIGTERM",
	"block-loop-on-full":   "blocks only on a client that does not read",
	"overlapping-writes":   "reorders only behind a full socket",
}

// peerExpect overrides correct() for the peers whose design makes a
// load's class another.
var peerExpect = map[string]map[string]expectation{
	"liburing-overflow-ignored": with(correct("liburing-echo with an 8-entry completion queue whose overflow is never flushed"), saturating, diagnose.Waiting,
		"4 clients' bursts of 16 frames post more than 8 completions at once: the rest stay in the kernel's overflow list, the echoes stall, and the loop sleeps in poll(2) with nothing to reap"),
	"own-threads": {
		idle:       {none, "a thread per connection blocks in read(2), never in an event wait, and uses no CPU: no thread behaves as a loop"},
		steady:     {none, "a thread per connection blocks in read(2) between frames and uses little CPU: no thread behaves as a loop"},
		saturating: {diagnose.Serving, "its connection threads run a tenth of the window or more each, doing the echoes"},
	},
}

// truthTargets lists every program of the truth table: the reference
// designs, every mutant on the first design it is held to, the plain
// echo and every --bug mode, the Go peers, every .peer file, and the
// diagnose helpers that wake themselves, spin (on write interest, on
// accepts at a full table, on a connection never read), block, and their
// controls.
func truthTargets(t *testing.T, bin, echo, self string) []truthTarget {
	var out []truthTarget
	for _, d := range designs.Names() {
		out = append(out, designTarget(bin, string(d)))
	}
	out = append(out, designTarget(bin, "lt", "--workers", "2"), designTarget(bin, "uring", "--workers", "2"))
	for _, m := range reactors.Mutants {
		out = append(out, mutantTarget(t, bin, m))
	}
	echoArgs := []string{echo, "--listen", "{addr}", "--lifetime", "10m"}
	out = append(out, truthTarget{group: "echo", name: "plain", argv: echoArgs, expect: correct("Go's netpoller and a goroutine per connection")})
	bugs := bugModes(t, echo)
	for _, b := range bugs {
		e, ok := echoExpect[b]
		if !ok {
			why, known := echoUnreached[b]
			if !known {
				t.Errorf("echo --bug %s has no expectation: add it to echoExpect or echoUnreached", b)
			}
			e = correct("its bug " + why)
		}
		out = append(out, truthTarget{group: "echo", name: "--bug " + b, argv: append(slices.Clone(echoArgs), "--bug", b), expect: e})
	}
	out = append(out, goPeers(t)...)
	paths, err := peertruth.Find(filepath.Join("..", "examples", "peers"))
	if err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	for _, path := range paths {
		p, err := peertruth.Load(path)
		if err != nil {
			t.Error(err)
			continue
		}
		tt := truthTarget{group: "peer", name: p.Name, expect: correct(p.Idiom)}
		if e, ok := peerExpect[p.Name]; ok {
			tt.expect = e
		}
		if why := p.Missing(); why != "" {
			tt.skip = why
		} else if tgt, err := p.Target(binDir); err != nil {
			tt.skip = "build failed: " + firstLine(err.Error())
		} else {
			c := tgt.(conformance.Command)
			tt.argv, tt.dir = c.Argv, c.Dir
		}
		out = append(out, tt)
	}
	out = append(out,
		truthTarget{group: "helper", name: "self-wake", argv: []string{self, "-test.run=^$"}, env: []string{helperEnv + "=self-wake"},
			expect: map[string]expectation{
				idle:       {diagnose.WakingItself, "its second thread writes its eventfd 10,000 times a second with nothing to do: 10,000 wakeups a second, no segment"},
				steady:     {diagnose.WakingItself, "10,000 token wakeups a second against ~1,500 segments a second (500 frames, their ACKs): over two a segment"},
				saturating: {diagnose.Serving, "the segments of a saturating load (tens of thousands a second) outnumber the 10,000 token wakeups: under two a segment, and the loop busy with work"},
			}},
		truthTarget{group: "helper", name: "epollout-spin", argv: []string{self, "-test.run=^$"}, env: []string{helperEnv + "=epollout-spin"}, loads: []string{idle},
			expect: map[string]expectation{idle: {diagnose.Spinning, "its one connection is held for EPOLLOUT, level-triggered, with nothing to send: every wait returns at once"}}},
		truthTarget{group: "helper", name: "emfile-spin", argv: []string{self, "-test.run=^$"}, env: []string{helperEnv + "=emfile-spin"}, loads: []string{idle},
			expect: map[string]expectation{idle: {diagnose.Spinning, "its descriptor table is full and its listener, level-triggered for EPOLLIN, holds the idle client's connection in its accept queue: every wait returns at once and every accept fails with EMFILE"}}},
		truthTarget{group: "helper", name: "emfile-shed", argv: []string{self, "-test.run=^$"}, env: []string{helperEnv + "=emfile-shed"}, loads: []string{idle},
			expect: map[string]expectation{idle: {diagnose.Waiting, "its table is full too, but it takes its listener out of its set at EMFILE and waits 100 ms on the empty set before it tries again: ten failed accepts a second"}}},
		truthTarget{group: "helper", name: "sleep-loop", argv: []string{self, "-test.run=^$"}, env: []string{helperEnv + "=sleep-loop"}, loads: []string{oneWrite},
			expect: map[string]expectation{oneWrite: {diagnose.Blocked, "after each 30 ms wait it sleeps 100 ms in nanosleep, its connection edge-triggered and never read: the client's 4 KiB wait unread while it sleeps"}}},
		truthTarget{group: "helper", name: "unread-spin", argv: []string{self, "-test.run=^$"}, env: []string{helperEnv + "=unread-spin"}, loads: []string{oneWrite},
			expect: map[string]expectation{oneWrite: {diagnose.Spinning, "its connection, level-triggered for EPOLLIN, holds the client's 4 KiB, which it never reads: every wait returns at once for it"}}},
		truthTarget{group: "helper", name: "unread-read", argv: []string{self, "-test.run=^$"}, env: []string{helperEnv + "=unread-read"}, loads: []string{oneWrite},
			expect: map[string]expectation{oneWrite: {diagnose.Waiting, "it reads the client's 4 KiB when its wait reports them, then waits with nothing to do"}}},
	)
	return out
}

// serveArgv starts a reference design on the row's address.
func serveArgv(bin, design string, extra ...string) []string {
	return append([]string{bin, "serve", "--reactor", design, "--listen", "{addr}", "--lifetime", "10m"}, extra...)
}

// designTarget is a reference design, correct, with extra flags (lt with
// a worker pool).
func designTarget(bin, design string, extra ...string) truthTarget {
	why := "a reference design"
	if len(extra) > 0 {
		why = "its pool hands each result back through the loop's eventfd: one token per unit of work, never two per segment"
	}
	return truthTarget{group: "design", name: strings.Join(append([]string{design}, extra...), " "), argv: serveArgv(bin, design, extra...), expect: correct(why)}
}

// mutantTarget is mutant m on the first design it is held to.
func mutantTarget(t *testing.T, bin string, m reactors.Mutant) truthTarget {
	d := reactors.LT
	if len(m.Designs) > 0 {
		d = m.Designs[0]
	}
	argv := serveArgv(bin, string(d), "--fault", m.Name)
	if slices.Contains([]string{"fd-identity", "lost-wakeup"}, m.Name) {
		argv = append(argv, "--workers", "2") // their hook is in the pool's hand-back
	}
	e, ok := mutantExpect[m.Name]
	if !ok {
		why, known := mutantUnreached[m.Name]
		if !known {
			t.Errorf("mutant %s has no expectation: add it to mutantExpect or mutantUnreached", m.Name)
		}
		e = correct("its bug " + why)
	}
	return truthTarget{group: "mutant", name: m.Name + " on " + string(d), argv: argv, expect: e}
}

// bugModes lists examples/echo's --bug modes, as its refusal of an unknown
// one names them.
func bugModes(t *testing.T, echo string) []string {
	out, _ := exec.Command(echo, "--bug", "-").CombinedOutput()
	_, list, ok := strings.Cut(string(out), "accepted: ")
	if !ok {
		t.Fatalf("echo --bug -: no list of modes in %q", out)
	}
	return strings.Split(strings.TrimSpace(firstLine(list)), ", ")
}

// goPeers builds the Go peers of examples/peers (a module of its own).
func goPeers(t *testing.T) []truthTarget {
	dir := t.TempDir()
	var out []truthTarget
	for _, name := range []string{"gnet", "netpoll", "stdlib"} {
		tt := truthTarget{group: "peer", name: "go-" + name, argv: []string{filepath.Join(dir, name), "--listen", "{addr}", "--lifetime", "10m"},
			expect: correct("a Go peer")}
		cmd := exec.Command("go", "build", "-o", dir+"/", "./"+name)
		cmd.Dir = filepath.Join("..", "examples", "peers")
		if b, err := cmd.CombinedOutput(); err != nil {
			tt.skip = "go build failed: " + firstLine(string(b))
		}
		out = append(out, tt)
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// truthRow is one diagnosis: a target under a load, what was expected and
// what was found.
type truthRow struct {
	target truthTarget
	load   string
	want   expectation
	got    diagnose.Class
	// unstarved is the verdict with every thread's run-queue wait set
	// aside (classified again with it 0): what the program was doing,
	// whatever CPU the machine left it.
	unstarved diagnose.Class
	// load1 is the machine's 1-minute load average when the row was taken.
	load1  string
	detail string // the deciding thread's figures, shortly
	// evidence is the deciding thread's whole evidence, one line.
	evidence string
	err      string // the row could not be run: why
}

// verdict is a report's class for the process: the first finding among
// its loop threads (spinning, waking itself, blocked, starved, in that
// order), else serving if a thread served, else waiting; none without a
// loop thread. The thread it is taken from is named with its signals.
func verdict(r diagnose.Report) (diagnose.Class, string, string) {
	if len(r.Threads) == 0 {
		return none, fmt.Sprintf("%d other threads", r.Others), ""
	}
	for _, c := range []diagnose.Class{diagnose.Spinning, diagnose.WakingItself, diagnose.Blocked, diagnose.Starved, diagnose.Serving, diagnose.Waiting} {
		for _, th := range r.Threads {
			if th.Class == c {
				return c, fmt.Sprintf("thread %d (%s) of %d loop threads: %s", th.Tid, th.Comm, len(r.Threads), brief(th)), strings.Join(th.Evidence, " | ")
			}
		}
	}
	return none, "", ""
}

// brief is a thread's deciding figures in one line.
func brief(th diagnose.Thread) string {
	var sig []string
	for _, e := range th.Evidence {
		if strings.HasPrefix(e, "signal (") {
			sig = append(sig, e[len("signal ("):strings.Index(e, ")")])
		}
	}
	s := fmt.Sprintf("ran %v, runq %v, %d vol/%d invol switches, wait samples %d/%d, %d segs in, %d token writes",
		time.Duration(th.Run).Round(time.Millisecond), time.Duration(th.RunqWait).Round(time.Millisecond), th.Voluntary, th.Involuntary, th.InWait, th.Samples, th.Segments, th.TokenWrites)
	if len(sig) > 0 {
		s += "; signals: " + strings.Join(sig, ", ")
	}
	return s
}

// runTarget starts tt on a free loopback port, pinned to serverCPUs when
// not "", runs each of its loads with clients pinned to clientCPU (-1:
// not pinned), diagnoses it for window under each, warm after the load
// started, and stops it.
func runTarget(t *testing.T, tt truthTarget, window, warm time.Duration, serverCPUs string, clientCPU int) []truthRow {
	t.Helper()
	ls := tt.loads
	if ls == nil {
		ls = loads
	}
	var rows []truthRow
	fail := func(why string) []truthRow {
		for _, l := range ls {
			rows = append(rows, truthRow{target: tt, load: l, want: tt.expect[l], err: why})
		}
		return rows
	}
	if tt.skip != "" {
		return fail("not run: " + tt.skip)
	}
	port, err := freePort()
	if err != nil {
		return fail(err.Error())
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cport, err := freePort()
	if err != nil {
		return fail(err.Error())
	}
	control := "127.0.0.1:" + strconv.Itoa(cport) // offered, as conformance offers it; never loaded
	argv := slices.Clone(tt.argv)
	for i := range argv {
		argv[i] = strings.NewReplacer("{addr}", addr, "{control}", control).Replace(argv[i])
	}
	if serverCPUs != "" {
		argv = append([]string{"taskset", "-c", serverCPUs}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = tt.dir
	cmd.Env = append(append(os.Environ(), "REACTORLAB_LISTEN="+addr, "REACTORLAB_CONTROL_LISTEN="+control, "LIFETIME_S=600"), tt.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var output strings.Builder
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if output.Len() < 4096 {
				output.WriteString(sc.Text() + "\n")
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		return fail(err.Error())
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		pw.Close()
	}()
	pid, err := waitListening(cmd.Process.Pid, addr, port, 30*time.Second)
	if err != nil {
		return fail(fmt.Sprintf("%v; output: %q", err, firstLine(output.String())))
	}
	for _, l := range ls {
		row := truthRow{target: tt, load: l, want: tt.expect[l]}
		stop, err := startLoad(addr, l, clientCPU)
		if err != nil {
			row.err = "load: " + err.Error()
			rows = append(rows, row)
			continue
		}
		time.Sleep(warm) // past connecting, JIT and first allocations
		rep, err := diagnose.Observe(context.Background(), pid, diagnose.Options{Window: window})
		if lerr := stop(); lerr != nil && err == nil && l != idle {
			row.err = "load: " + lerr.Error()
		}
		if err != nil {
			row.err = "diagnose: " + err.Error()
		} else {
			row.got, row.detail, row.evidence = verdict(rep)
			for i := range rep.Threads {
				rep.Threads[i].RunqWait = 0
				diagnose.Classify(&rep.Threads[i], time.Duration(rep.Window))
			}
			row.unstarved, _, _ = verdict(rep)
			if b, err := os.ReadFile("/proc/loadavg"); err == nil {
				row.load1 = strings.Fields(string(b))[0]
			}
		}
		rows = append(rows, row)
		time.Sleep(200 * time.Millisecond)
	}
	return rows
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until a process of pgid's group holds a socket
// listening on port (a shell or a launcher script may stand between the
// group's leader and the server) and returns it. It looks in the kernel's
// tables and never connects: a helper that serves one connection would
// take a probe's for its client's.
func waitListening(pgid int, addr string, port int, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	for ; ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("nothing listening on %s within %v", addr, limit)
		}
		if st, err := procfs.ReadStat(pgid); err != nil || st.Zombie() {
			return 0, fmt.Errorf("exited before listening on %s", addr)
		}
		inodes, err := inetdiag.ListeningInodes(uint16(port))
		if err != nil {
			continue
		}
		pids, err := procfs.Pids()
		if err != nil {
			return 0, err
		}
		for _, pid := range pids {
			st, err := procfs.ReadStat(pid)
			if err != nil || st.Pgrp != pgid {
				continue
			}
			fds, _ := procfs.ReadFds(pid)
			for _, f := range fds {
				if ino, ok := f.SocketInode(); ok && inodes[ino] {
					return pid, nil
				}
			}
		}
	}
}

// startLoad starts load l on addr with clients pinned to cpu (-1: not
// pinned); the function it returns stops them, waits for them and says
// whether an echo went missing or a connection failed.
func startLoad(addr, l string, cpu int) (func() error, error) {
	n := 4
	if l == idle || l == oneWrite {
		n = 1
	}
	var conns []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	if l == oneWrite {
		conns[0].SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := conns[0].Write(make([]byte, 4096)); err != nil {
			conns[0].Close()
			return nil, err
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	note := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-stop:
		default:
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if l == steady || l == saturating {
		for k, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if cpu >= 0 {
					var set unix.CPUSet
					set.Set(cpu)
					unix.SchedSetaffinity(0, &set)
				}
				frame := wire.AppendFrame(nil, wire.KindData, 0, uint64(k+1), 0, 0, make([]byte, 512-wire.HeaderSize))
				batch := frame
				if l == saturating {
					batch = bytes16(frame)
				}
				buf := make([]byte, len(batch))
				next := time.Now()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if l == steady {
						next = next.Add(8 * time.Millisecond)
						time.Sleep(time.Until(next))
					}
					c.SetDeadline(time.Now().Add(5 * time.Second))
					if _, err := c.Write(batch); err != nil {
						note(err)
						return
					}
					if _, err := io.ReadFull(c, buf); err != nil {
						note(err)
						return
					}
				}
			}()
		}
	}
	return func() error {
		close(stop)
		for _, c := range conns {
			c.SetDeadline(time.Now())
		}
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
		return firstErr
	}, nil
}

func bytes16(frame []byte) []byte {
	var out []byte
	for range 16 {
		out = append(out, frame...)
	}
	return out
}

// placement is the CPUs the server and its clients are pinned to: the
// server on CPU 0 and the clients on CPU 1 where taskset and two CPUs are
// there (a loaded server does not then wait behind its own clients), else
// neither.
func placement() (string, int) {
	if _, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() >= 2 {
		return "0", 1
	}
	return "", -1
}

// truthBins builds what the rows start.
func truthBins(t *testing.T) (bin, echo, self string) {
	return testbin.Path(t, "cmd/reactorlab"), testbin.Path(t, "examples/echo"), os.Args[0]
}

// TestTruthTable diagnoses every program of the truth table under every
// load and writes the table, the precision and recall of each class and
// every miss and false alarm. It takes about 15 minutes, so it runs only
// when asked: REACTORLAB_TRUTHTABLE=1 (REACTORLAB_TRUTHTABLE_OUT=FILE also
// writes the table to FILE; REACTORLAB_TRUTHTABLE_ONLY=a,b runs the
// targets whose names contain one of those). It fails on no row: the
// table is a measurement, and docs/DIAGNOSE.md explains each miss.
func TestTruthTable(t *testing.T) {
	if os.Getenv("REACTORLAB_TRUTHTABLE") != "1" {
		t.Skip("REACTORLAB_TRUTHTABLE=1 runs the truth table (about 15 minutes)")
	}
	bin, echo, self := truthBins(t)
	serverCPUs, clientCPU := placement()
	var only []string
	if s := os.Getenv("REACTORLAB_TRUTHTABLE_ONLY"); s != "" {
		only = strings.Split(s, ",")
	}
	var rows []truthRow
	for _, tt := range truthTargets(t, bin, echo, self) {
		if only != nil && !slices.ContainsFunc(only, func(o string) bool { return strings.Contains(tt.group+" "+tt.name, o) }) {
			continue
		}
		got := runTarget(t, tt, diagnose.DefaultWindow, time.Second, serverCPUs, clientCPU)
		for _, r := range got {
			t.Logf("%s %s / %s: want %s, got %s %s %s", r.target.group, r.target.name, r.load, r.want.class, r.got, r.detail, r.err)
		}
		rows = append(rows, got...)
	}
	text := truthTableText(rows)
	t.Log("\n" + text)
	if out := os.Getenv("REACTORLAB_TRUTHTABLE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestTruthTableRows runs a few rows of the truth table in the default
// tier, with a 1 s window: the lt reference design idle (waiting) and
// saturated (serving, never spinning), its permanent-epollout mutant idle
// (spinning), and the uring design with a worker pool idle (waiting in
// io_uring_enter) and saturated (serving: its worker's tokens are held to
// the segments of the sockets its ring serves, in no epoll set, and are
// fewer than two per segment: never waking itself). A saturated row
// diagnosed starved is logged, not failed: on a shared machine the
// run-queue figure can say the loop waited for its CPU as long as it ran,
// and starved is then the rule's answer.
func TestTruthTableRows(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the truth table's default rows run in the full tier")
	}
	bin := testbin.Path(t, "cmd/reactorlab")
	serverCPUs, clientCPU := placement()
	lt := designTarget(bin, "lt")
	lt.loads = []string{idle, saturating}
	i := slices.IndexFunc(reactors.Mutants, func(m reactors.Mutant) bool { return m.Name == "permanent-epollout" })
	if i < 0 {
		t.Fatal("no permanent-epollout mutant")
	}
	spin := mutantTarget(t, bin, reactors.Mutants[i])
	spin.loads = []string{idle}
	ring := designTarget(bin, "uring", "--workers", "2")
	ring.loads = []string{idle, saturating}
	for _, tt := range []truthTarget{lt, spin, ring} {
		for _, r := range runTarget(t, tt, time.Second, 300*time.Millisecond, serverCPUs, clientCPU) {
			switch {
			case r.err != "":
				t.Errorf("%s / %s: %s", tt.name, r.load, r.err)
			case r.got == r.want.class:
				t.Logf("%s / %s: %s: %s", tt.name, r.load, r.got, r.detail)
			case r.load == saturating && r.got == diagnose.Starved:
				t.Logf("%s / %s: starved by the machine, not the program: %s", tt.name, r.load, r.evidence)
			default:
				t.Errorf("%s / %s: diagnosed %s, want %s (%s)\n%s", tt.name, r.load, r.got, r.want.class, r.want.why, r.evidence)
			}
		}
	}
}

// truthTableText is the table as markdown: one row per diagnosis, then
// per class its precision (of the rows diagnosed so, the share expected
// so) and recall (of the rows expected so, the share diagnosed so), then
// the misses.
func truthTableText(rows []truthRow) string {
	var b strings.Builder
	b.WriteString("| group | target | load | expected | diagnosed | run-queue wait set aside | load average | |\n|---|---|---|---|---|---|---|---|\n")
	var misses, notRun []string
	var run []truthRow
	for _, r := range rows {
		if r.err != "" {
			notRun = append(notRun, fmt.Sprintf("- %s %s / %s: %s", r.target.group, r.target.name, r.load, r.err))
			continue
		}
		run = append(run, r)
		mark := "ok"
		switch {
		case r.got == r.want.class:
		case r.got == diagnose.Starved && r.unstarved == r.want.class:
			mark = "starved by the machine"
		default:
			mark = "MISS"
		}
		if r.unstarved != r.want.class {
			misses = append(misses, fmt.Sprintf("- %s %s / %s: expected %s (%s); diagnosed %s (%s with the run-queue wait set aside): %s\n  evidence: %s",
				r.target.group, r.target.name, r.load, r.want.class, r.want.why, r.got, r.unstarved, r.detail, r.evidence))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.target.group, r.target.name, r.load, r.want.class, r.got, r.unstarved, r.load1, mark)
	}
	b.WriteString("\nAs diagnosed:\n\n")
	scores(&b, run, func(r truthRow) diagnose.Class { return r.got })
	b.WriteString("\nWith every thread's run-queue wait set aside (what the program did, whatever CPU the machine left it):\n\n")
	scores(&b, run, func(r truthRow) diagnose.Class { return r.unstarved })
	if len(misses) > 0 {
		b.WriteString("\nmisses and false alarms (the rows whose class, with the run-queue wait set aside, is not the expected one):\n" + strings.Join(misses, "\n") + "\n")
	}
	if len(notRun) > 0 {
		b.WriteString("\nnot run:\n" + strings.Join(notRun, "\n") + "\n")
	}
	return b.String()
}

// scores writes per class the rows expected so, diagnosed so (by got),
// right, precision and recall.
func scores(b *strings.Builder, rows []truthRow, got func(truthRow) diagnose.Class) {
	tp, fp, fn := map[diagnose.Class]int{}, map[diagnose.Class]int{}, map[diagnose.Class]int{}
	for _, r := range rows {
		if g := got(r); g == r.want.class {
			tp[g]++
		} else {
			fp[g]++
			fn[r.want.class]++
		}
	}
	b.WriteString("| class | expected | diagnosed | right | precision | recall |\n|---|---|---|---|---|---|\n")
	for _, c := range []diagnose.Class{diagnose.Waiting, diagnose.Serving, diagnose.Spinning, diagnose.WakingItself, diagnose.Blocked, diagnose.Starved, none} {
		exp, diag := tp[c]+fn[c], tp[c]+fp[c]
		if exp+diag == 0 {
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %s |\n", c, exp, diag, tp[c], ratio(tp[c], diag), ratio(tp[c], exp))
	}
}

func ratio(n, d int) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%d/%d = %.2f", n, d, float64(n)/float64(d))
}
