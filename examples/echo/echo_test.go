//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
)

var bin string // this command, built by TestMain

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "echo-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "echo")
	// `go test` puts its own GOROOT/bin first in PATH.
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build echo: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

func start(t *testing.T, args ...string) *proc.Process {
	t.Helper()
	p, err := proc.Start(context.Background(), proc.Spec{Argv: append([]string{bin, "--lifetime", "1m"}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if e, err := p.Stop(); err != nil || e.Code != 0 {
			t.Errorf("stop: %v, %v; stderr:\n%s", e, err, e.StderrTail)
		}
	})
	return p
}

func dial(t *testing.T, p *proc.Process) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func roundTrip(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
		t.Fatal(err)
	}
}

// Each symptom is what a conformance case would see of one bug. It reports
// whether p shows it, and what it measured.
type symptom func(t *testing.T, p *proc.Process) (bool, string)

// burnsIdle: CPU over 300 ms with one idle connection.
func burnsIdle(t *testing.T, p *proc.Process) (bool, string) {
	c := dial(t, p)
	roundTrip(t, c, make([]byte, 64))
	cpu := func() int64 {
		ns, err := p.ThreadCPU()
		if errors.Is(err, proc.ErrNoSchedstat) {
			var u proc.Usage
			u, err = p.Usage()
			ns = u.CPUNs()
		}
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	c0 := cpu()
	time.Sleep(300 * time.Millisecond)
	used := time.Duration(cpu() - c0)
	return used > 30*time.Millisecond, fmt.Sprintf("%v CPU in 300ms idle", used)
}

// growsUnderSlowConsumer: peak RSS while a client sends up to 64 MiB and
// reads nothing back. It sends 1 MiB at a time while the server takes it; a
// server with backpressure stops taking bytes once the socket buffers are
// full.
func growsUnderSlowConsumer(t *testing.T, p *proc.Process) (bool, string) {
	u0, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	var sent int64
	for sent < 64<<20 {
		c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := io.CopyN(c, zeros{}, 1<<20)
		sent += n
		if err != nil {
			break
		}
	}
	u1, err := p.Usage()
	if err != nil {
		t.Fatal(err)
	}
	grew := u1.PeakRSS - u0.PeakRSS
	return grew > 32<<20, fmt.Sprintf("sent %d MiB unread, peak RSS grew %d MiB", sent>>20, grew>>20)
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// leaksFds: open fds after 10 clients closed.
func leaksFds(t *testing.T, p *proc.Process) (bool, string) {
	const n = 10
	fds := func() int {
		u, err := p.Usage()
		if err != nil {
			t.Fatal(err)
		}
		return u.Fds
	}
	var cs []net.Conn
	for range n {
		c := dial(t, p)
		roundTrip(t, c, []byte("x"))
		cs = append(cs, c)
	}
	open := fds()
	for _, c := range cs {
		c.Close()
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for fds() > open-n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	after := fds()
	return after > open-n, fmt.Sprintf("%d fds with %d clients, %d after they closed", open, n, after)
}

// losesFragments: a 32-byte header sent in two 16-byte halves 50 ms apart.
func losesFragments(t *testing.T, p *proc.Process) (bool, string) {
	c := dial(t, p)
	c.Write(make([]byte, 16))
	time.Sleep(50 * time.Millisecond)
	c.Write(make([]byte, 16))
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	n, _ := io.ReadFull(c, make([]byte, 32))
	return n < 32, fmt.Sprintf("%d of 32 bytes echoed", n)
}

// losesEchoesAtEOF: a client with a 4 KiB receive buffer sends 64 KiB at a
// time, reading nothing, until the server stops taking bytes (every
// buffer, the server's queue included, is full; at most 64 MiB), then
// shuts down its write side and reads: fewer bytes come back than it
// sent, or an error instead of EOF.
func losesEchoesAtEOF(t *testing.T, p *proc.Process) (bool, string) {
	return losesEchoesAfterHalfClose(t, p.Addr())
}

// losesEchoesAfterHalfClose is losesEchoesAtEOF against addr.
func losesEchoesAfterHalfClose(t *testing.T, addr string) (bool, string) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return os.NewSyscallError("setsockopt SO_RCVBUF", serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = byte(i % 251)
	}
	var sent int64
	for sent < 64<<20 {
		c.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Write(chunk)
		sent += int64(n)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("after %d bytes: %v", sent, err)
			}
			break
		}
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.Copy(io.Discard, c)
	return got < sent || err != nil, fmt.Sprintf("%d of %d bytes echoed after the half-close, then %v (nil: EOF)", got, sent, err)
}

// TestQueuedAtEOF: the queued serve, in this process, delivers every
// echo still queued at the reader's EOF, then EOF; with the free-at-eof
// switch on, the same serve loses them. (The command serves without a
// bug through echo, not queued: this is where its correct half runs.)
func TestQueuedAtEOF(t *testing.T) {
	t.Parallel() // its own listener and client
	for _, freeAtEOF := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			queued(c, freeAtEOF)
		}()
		// Also when the client fails the test: the serve ends once the
		// client's connection closes (its deferred Close).
		t.Cleanup(func() { ln.Close(); <-served })
		lost, what := losesEchoesAfterHalfClose(t, ln.Addr().String())
		if lost != freeAtEOF {
			t.Errorf("queued serve, free at EOF %v: %s", freeAtEOF, what)
		} else {
			t.Logf("queued serve, free at EOF %v: %s", freeAtEOF, what)
		}
	}
}

// TestMaxConns: with --max-conns 2, a third connection is closed at once
// (EOF, nothing echoed) while the first two are served; once one of those
// closes, a new connection is served again.
func TestMaxConns(t *testing.T) {
	p := start(t, "--max-conns", "2")
	// Start's readiness probe may still hold a slot for a moment.
	first, second := servedConn(t, p), servedConn(t, p)
	extra := dial(t, p)
	extra.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := extra.Read(make([]byte, 16)); !errors.Is(err, io.EOF) {
		t.Fatalf("third connection with --max-conns 2: read %d bytes, %v; want EOF at once", n, err)
	}
	roundTrip(t, second, []byte("still served"))
	first.Close()
	servedConn(t, p) // once the server has seen first's close
}

// servedConn dials p until a connection is served (a round trip), for at
// most 2 s: a server at its --max-conns closes new connections at once
// until one of its open ones has gone.
func servedConn(t *testing.T, p *proc.Process) net.Conn {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		c := dial(t, p)
		c.SetDeadline(time.Now().Add(time.Second))
		_, err := c.Write([]byte("served?"))
		if err == nil {
			_, err = io.ReadFull(c, make([]byte, 7))
		}
		if err == nil {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			return c
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no connection served within 2 s: last %v", err)
		}
	}
}

// openFilesLimit reads the soft and hard "Max open files" of pid.
func openFilesLimit(t *testing.T, pid int) (soft, hard string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				return f[0], f[1]
			}
		}
	}
	t.Fatalf("no Max open files in /proc/%d/limits:\n%s", pid, b)
	return "", ""
}

// TestNofile: --nofile N is the server's RLIMIT_NOFILE, soft and hard,
// lowered or (as root) raised; a limit the kernel refuses ends the server
// with code 1 and the reason.
func TestNofile(t *testing.T) {
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, n uint64) {
		p := start(t, "--nofile", strconv.FormatUint(n, 10))
		want := strconv.FormatUint(n, 10)
		if soft, hard := openFilesLimit(t, p.Pid()); soft != want || hard != want {
			t.Errorf("--nofile %d: the server's limits are soft %s, hard %s", n, soft, hard)
		}
		roundTrip(t, dial(t, p), []byte("served"))
	}
	t.Run("lower", func(t *testing.T) { check(t, 64) })
	t.Run("raise", func(t *testing.T) {
		if !hasCapability(t, capSysResource) {
			t.Skipf("raising the hard RLIMIT_NOFILE needs root's CAP_SYS_RESOURCE, which this test (uid %d) does not have", os.Geteuid())
		}
		nrOpen, err := os.ReadFile("/proc/sys/fs/nr_open")
		if err != nil {
			t.Fatal(err)
		}
		ceiling, err := strconv.ParseUint(strings.TrimSpace(string(nrOpen)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if own.Max >= ceiling {
			t.Skipf("the hard limit %d is already fs.nr_open: nothing to raise it to", own.Max)
		}
		check(t, min(own.Max+1000, ceiling))
	})
	t.Run("refused", func(t *testing.T) {
		addr, err := proc.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Above fs.nr_open (at most 2^30): refused even to root.
		out, err := exec.CommandContext(ctx, bin, "--listen", addr, "--lifetime", "5s", "--nofile", strconv.FormatInt(1<<40, 10)).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "--nofile") {
			t.Errorf("--nofile 2^40: %v, %q; want exit 1 giving the reason", err, out)
		}
	})
}

// Capabilities the tests look for (capability.h).
const (
	capNetAdmin    = 12
	capSysResource = 24
)

// hasCapability reports whether this process has capability bit in
// its effective set (children started with exec keep it: uid 0 without
// ambient capabilities keeps the effective set across exec).
func hasCapability(t *testing.T, bit uint) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			set, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatalf("CapEff %q: %v", hex, err)
			}
			return set&(1<<bit) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

// serverSocketBuffers reads, with ss(8), the send and receive buffers
// (skmem tb and rb) of the server's end of the connection from client.
func serverSocketBuffers(t *testing.T, client net.Conn) (sndbuf, rcvbuf int) {
	t.Helper()
	ssPath, err := exec.LookPath("ss")
	if err != nil {
		t.Skip("no ss(8) to read the server's socket buffers with:", err)
	}
	_, port, _ := net.SplitHostPort(client.LocalAddr().String())
	out, err := exec.Command(ssPath, "-tmnH", "state", "established", "( dport = :"+port+" )").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`rb(\d+),t\d+,tb(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no skmem rb/tb for the server's socket (to port %s) in ss's output:\n%s", port, out)
	}
	rcvbuf, _ = strconv.Atoi(string(m[1]))
	sndbuf, _ = strconv.Atoi(string(m[2]))
	return sndbuf, rcvbuf
}

// TestSockbuf: --sockbuf 8 MiB, above net.core.wmem_max and rmem_max on
// most machines, gives the server's sockets 8 MiB buffers as
// setsockopt(2) takes them (16 MiB as the kernel counts them) with the
// privilege for SO_*BUFFORCE (CAP_NET_ADMIN; the server inherits this
// test's capabilities); without it, what the caps allow, and a warning
// saying so.
func TestSockbuf(t *testing.T) {
	const size = 8 << 20
	p := start(t, "--sockbuf", strconv.Itoa(size))
	c := dial(t, p)
	roundTrip(t, c, []byte("buffered"))
	snd, rcv := serverSocketBuffers(t, c)
	wantSnd, wantRcv := 2*size, 2*size
	forced := hasCapability(t, capNetAdmin)
	if !forced {
		capped := func(sysctl string) int {
			b, err := os.ReadFile("/proc/sys/net/core/" + sysctl)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return 2 * min(size, n)
		}
		wantSnd, wantRcv = capped("wmem_max"), capped("rmem_max")
		if tail := p.StderrTail(); !strings.Contains(tail, "SO_SNDBUFFORCE/SO_RCVBUFFORCE refused") {
			t.Errorf("no CAP_NET_ADMIN, but no warning that the forced sizes were refused; stderr:\n%s", tail)
		}
	}
	if snd != wantSnd || rcv != wantRcv {
		t.Errorf("--sockbuf %d (CAP_NET_ADMIN %v): the server's socket has sndbuf %d, rcvbuf %d; want %d, %d", size, forced, snd, rcv, wantSnd, wantRcv)
	}
}

// TestExitOnEMFILE: at a descriptor limit of 32 with 48 connections
// dialled, the plain echo waits and keeps serving once connections close;
// with --bug exit-on-emfile it exits (code 1), as gnet v2.9.7 does.
func TestExitOnEMFILE(t *testing.T) {
	t.Parallel() // its own servers; the descriptor limit is theirs, not this process's
	for _, bug := range []bool{false, true} {
		args := []string{bin, "--lifetime", "1m"}
		if bug {
			args = append(args, "--bug", "exit-on-emfile")
		}
		p, err := proc.Start(context.Background(), proc.Spec{Argv: args, FdLimit: 32})
		if err != nil {
			t.Fatal(err)
		}
		var conns []net.Conn
		for range 48 {
			c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		// The accept loop meets the limit within milliseconds of the dials.
		select {
		case <-p.Done():
		case <-time.After(2 * time.Second):
		}
		for _, c := range conns {
			c.Close()
		}
		exited := false
		select {
		case <-p.Done():
			exited = true
		default:
		}
		if !exited {
			// Recovery: with the connections closed, a new one is served.
			c := dial(t, p)
			roundTrip(t, c, []byte("after the limit"))
			c.Close() // else the echo, stopping, waits 3 s for this client's EOF
		}
		e, err := p.Stop()
		switch {
		case err != nil:
			t.Errorf("bug %v: stop: %v", bug, err)
		case bug && (!exited || e.Code != 1):
			t.Errorf("--bug exit-on-emfile: exited %v, code %d; want it gone with code 1", exited, e.Code)
		case !bug && (exited || e.Code != 0):
			t.Errorf("plain echo at its limit: exited %v, code %d; want it serving, then code 0\n%s", exited, e.Code, e.StderrTail)
		}
	}
}

// The plain echo shows no symptom; each bug shows its own. Each symptom
// is measured on processes of its own (their CPU, memory, descriptors and
// echoes), so the bugs run side by side, and beside this package's other
// parallel tests: a neighbour can only take CPU from busy-idle's spinning
// server, which needs a tenth of a CPU to show.
func TestBugs(t *testing.T) {
	t.Parallel()
	symptoms := map[string]symptom{
		"busy-idle":       burnsIdle,
		"no-backpressure": growsUnderSlowConsumer,
		"leak-on-close":   leaksFds,
		"drop-partial":    losesFragments,
		"exit-on-emfile":  nil, // TestExitOnEMFILE: it needs a descriptor limit
		"free-at-eof":     losesEchoesAtEOF,
		// The stop contract's bugs show under SIGTERM, slow-control under
		// hot data on a control address: conformance's TestBlackBox runs
		// the cases they break (S2, X3, X4, X5).
		"slow-control":         nil,
		"rst-on-term":          nil,
		"close-at-fin-on-term": nil,
		"drop-on-term":         nil,
		"keep-conns-on-term":   nil,
		"serve-after-term":     nil,
		// The herd shows in the wakeups of the server's threads:
		// conformance's TestBlackBox runs M4 on it.
		"herd":      nil,
		"herd-poll": nil,
		// Conformance's TestBlackBox runs W3 on drop-short-write, W5 on
		// block-loop-on-full, TestOverlappingWritesReorder W3 on
		// overlapping-writes, and
		// TestStopIsJudgedApart stops crash-at-stop.
		"drop-short-write":   nil,
		"crash-at-stop":      nil,
		"overlapping-writes": nil,
		"block-loop-on-full": nil,
	}
	if len(symptoms) != len(bugs) {
		t.Fatalf("%d symptoms for %d bugs", len(symptoms), len(bugs))
	}
	for bug, shows := range symptoms {
		if shows == nil {
			continue
		}
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			if got, what := shows(t, start(t)); got {
				t.Errorf("plain echo shows the symptom: %s", what)
			} else {
				t.Logf("plain: %s", what)
			}
			if got, what := shows(t, start(t, "--bug", bug)); !got {
				t.Errorf("--bug %s does not show its symptom: %s", bug, what)
			} else {
				t.Logf("--bug %s: %s", bug, what)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	out, err := exec.Command(bin, "--bug", "nope").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "accepted: block-loop-on-full, busy-idle, close-at-fin-on-term, crash-at-stop, drop-on-term, drop-partial, drop-short-write, exit-on-emfile, free-at-eof, herd, herd-poll, keep-conns-on-term, leak-on-close, no-backpressure, overlapping-writes, rst-on-term, serve-after-term, slow-control") {
		t.Errorf("--bug nope: %v, %q; want exit 2 listing the bugs", err, out)
	}
	for _, bad := range [][]string{{"--term-exit", "256"}, {"--arena", "-1"}, {"--reserve-fds", "-2"}, {"--churn", "-1"}} {
		out, err := exec.Command(bin, bad...).CombinedOutput()
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), bad[0]) {
			t.Errorf("%v: %v, %q; want exit 2 naming the flag", bad, err, out)
		}
	}
	out, err = exec.Command(bin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "leak-on-close") {
		t.Errorf("--help: %v, %q", err, out)
	}

	// --control, else $REACTORLAB_CONTROL_LISTEN, is a second echo.
	ctl, _ := proc.FreeAddr()
	p := start(t, "--control", ctl)
	roundTrip(t, dial(t, p), []byte("data"))
	c, err := net.DialTimeout("tcp", ctl, 5*time.Second)
	if err != nil {
		t.Fatalf("--control %s: %v", ctl, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	roundTrip(t, c, []byte("control"))
	ctlEnv, _ := proc.FreeAddr()
	cmd := exec.Command(bin, "--lifetime", "100ms")
	cmd.Env = append(os.Environ(), "REACTORLAB_CONTROL_LISTEN="+ctlEnv, "REACTORLAB_LISTEN=127.0.0.1:0")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "echo: control on "+ctlEnv) {
		t.Errorf("$REACTORLAB_CONTROL_LISTEN=%s: %v, %q", ctlEnv, err, out)
	}

	// --listen wins over $REACTORLAB_LISTEN.
	a1, _ := proc.FreeAddr()
	a2, _ := proc.FreeAddr()
	cmd = exec.Command(bin, "--listen", a2, "--lifetime", "100ms")
	cmd.Env = append(os.Environ(), "REACTORLAB_LISTEN="+a1)
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "echo: listening on "+a2) {
		t.Errorf("--listen %s with env %s: %v, %q", a2, a1, err, out)
	}
}
