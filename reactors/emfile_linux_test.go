//go:build linux

package reactors_test

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

const emfileChildEnv = "REACTORLAB_EMFILE_CHILD"

// TestEMFILE runs TestEMFILEChild in a child process whose descriptor limit
// (soft and hard: Go raises the soft limit to the hard one at start) is 64,
// so the reactor runs out of descriptors while connections keep arriving.
func TestEMFILE(t *testing.T) {
	if os.Getenv(emfileChildEnv) != "" {
		t.Skip("in the child")
	}
	out := runChild(t, "^TestEMFILEChild$", emfileChildEnv+"=1", 60*time.Second)
	t.Logf("child:\n%s", out)
}

// TestEMFILEChild: 100 connections arrive at a reactor that can hold about
// 45. Those it cannot hold are accepted and closed at once (reserve-fd
// trick) instead of spinning on a listener that stays readable; the loop
// then goes idle (deadline timers: an idle loop makes no epoll_wait calls);
// and after some clients leave, a new connection is accepted and served.
func TestEMFILEChild(t *testing.T) {
	if os.Getenv(emfileChildEnv) == "" {
		t.Skip("runs only as TestEMFILE's child process")
	}
	// Start the runtime's own poller while descriptors are still available.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
	}
	// Client sockets are made now, above the limit to come: connect(2)
	// needs no new descriptor, accept(2) on the reactor's side does.
	const clients, limit = 100, 64
	fds := make([]int, clients+1)
	for i := range fds {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Dup3(fd, 500+i, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fds[i] = 500 + i
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	cfg := reactors.DefaultConfig()
	cfg.Timer = reactors.TimerDeadline
	r := reactortest.Start(t, reactors.LT, cfg)
	ap := r.Addr()
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	for _, fd := range fds[:clients] {
		if err := unix.Connect(fd, sa); err != nil {
			t.Fatalf("connect: %v", err)
		}
	}
	if !reactortest.WaitFor(10*time.Second, func() bool {
		c := r.Stats().Counters
		return c.ConnsAccepted+c.ConnsRefused >= clients
	}) {
		t.Fatalf("connections not all handled: %+v", r.Stats().Counters)
	}
	c0 := r.Stats().Counters
	if c0.AcceptEMFILE == 0 || c0.ConnsRefused == 0 {
		t.Fatalf("no EMFILE seen (accepted %d, refused %d): the limit did not bite, the test proves nothing", c0.ConnsAccepted, c0.ConnsRefused)
	}
	if !reactortest.Settled(r, 20*time.Millisecond, 5*time.Second) {
		t.Fatalf("after EMFILE the loop never went idle: %+v", r.Stats().Counters)
	}
	c0 = r.Stats().Counters
	var rus0, rus1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &rus0)
	time.Sleep(300 * time.Millisecond) // a measurement window
	unix.Getrusage(unix.RUSAGE_SELF, &rus1)
	c1 := r.Stats().Counters
	cpu := time.Duration(rus1.Utime.Nano() + rus1.Stime.Nano() - rus0.Utime.Nano() - rus0.Stime.Nano())
	// Idle with deadline timers: no epoll_wait at all; allow 3 for the
	// window's edges. A busy loop makes thousands and burns the window.
	if waits := c1.EpollWaits - c0.EpollWaits; waits > 3 || cpu > 100*time.Millisecond {
		t.Fatalf("after EMFILE the loop is not idle: %d epoll_waits and %v CPU in 300 ms", waits, cpu)
	}
	// Which clients were served: the shed ones read EOF at once.
	var alive []int
	buf := make([]byte, 16)
	for _, fd := range fds[:clients] {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 0); n == 1 {
			if m, _ := unix.Read(fd, buf); m == 0 {
				continue // shed: accepted and closed by the reserve-fd trick
			}
		}
		alive = append(alive, fd)
	}
	if len(alive) != int(c0.ConnsAccepted) {
		t.Fatalf("%d clients still connected, reactor accepted %d", len(alive), c0.ConnsAccepted)
	}
	// Recovery: 10 clients leave; a newcomer is served.
	for _, fd := range alive[:10] {
		unix.Close(fd)
	}
	if !reactortest.WaitFor(10*time.Second, func() bool { return r.Stats().Counters.ConnsClosed >= 10 }) {
		t.Fatal("closes not seen")
	}
	late := fds[clients]
	if err := unix.Connect(late, sa); err != nil {
		t.Fatal(err)
	}
	frame := wire.AppendFrame(nil, wire.KindData, 0, 7, 1, 0, []byte("after EMFILE"))
	if _, err := unix.Write(late, frame); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(frame))
	unix.SetsockoptTimeval(late, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10})
	for n := 0; n < len(got); {
		m, err := unix.Read(late, got[n:])
		if err != nil || m == 0 {
			t.Fatalf("newcomer after recovery: read %d bytes, err %v; counters %+v", n, err, r.Stats().Counters)
		}
		n += m
	}
	if string(got) != string(frame) {
		t.Fatalf("newcomer echo differs")
	}
	fmt.Printf("EMFILE: accepted %d, shed %d, emfile %d; idle after: %d epoll_waits, %v CPU in 300 ms; recovered\n",
		c0.ConnsAccepted, c0.ConnsRefused, c0.AcceptEMFILE, c1.EpollWaits-c0.EpollWaits, cpu)
	for _, fd := range fds {
		unix.Close(fd)
	}
}
