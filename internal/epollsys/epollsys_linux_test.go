//go:build linux

package epollsys

import (
	"math"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/slots"
)

// socketPair returns a connected pair of non-blocking stream sockets,
// closed at the end of the test.
func socketPair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// newEpoll returns an epoll fd closed at the end of the test.
func newEpoll(t *testing.T) int {
	t.Helper()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(epfd) })
	return epfd
}

// newEventfd returns a non-blocking eventfd closed at the end of the test.
func newEventfd(t *testing.T, initial uint) int {
	t.Helper()
	fd, err := unix.Eventfd(initial, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func TestReadWrite(t *testing.T) {
	a, b := socketPair(t)
	if n, e := Read(a, make([]byte, 8)); e != unix.EAGAIN {
		t.Fatalf("Read of an empty socket = %d, %v; want EAGAIN", n, e)
	}
	if n, e := Write(a, []byte("hello")); n != 5 || e != 0 {
		t.Fatalf("Write = %d, %v; want 5, 0", n, e)
	}
	buf := make([]byte, 16)
	if n, e := Read(b, buf); n != 5 || e != 0 || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %d, %v, %q; want 5, 0, \"hello\"", n, e, buf[:max(n, 0)])
	}
	// Empty buffers make no system call: even a bad fd succeeds.
	if n, e := Read(-1, nil); n != 0 || e != 0 {
		t.Errorf("Read(-1, nil) = %d, %v; want 0, 0", n, e)
	}
	if n, e := Write(-1, []byte{}); n != 0 || e != 0 {
		t.Errorf("Write(-1, empty) = %d, %v; want 0, 0", n, e)
	}
	if _, e := Write(-1, []byte{1}); e != unix.EBADF {
		t.Errorf("Write(-1, 1 byte) errno = %v; want EBADF", e)
	}
	// A full send buffer is EAGAIN, not a block.
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		_, e := Write(a, chunk)
		if e == unix.EAGAIN {
			break
		}
		if e != 0 || i > 1<<12 {
			t.Fatalf("filling the send buffer: errno %v after %d writes", e, i)
		}
	}
}

// TestCtlRefThroughKernel registers an eventfd with a Ref and checks that
// both waits hand it back, and that Ctl's errors are the bare errno.
func TestCtlRefThroughKernel(t *testing.T) {
	epfd := newEpoll(t)
	efd := newEventfd(t, 0)
	want := slots.MakeRef(math.MaxUint32, 7) // a negative int32 in ev.Fd
	if err := Ctl(epfd, unix.EPOLL_CTL_ADD, efd, unix.EPOLLIN, want); err != nil {
		t.Fatal(err)
	}
	evs := make([]unix.EpollEvent, 4)
	if n, e := PollNow(epfd, evs); n != 0 || e != 0 {
		t.Fatalf("PollNow before any event = %d, %v; want 0, 0", n, e)
	}
	if err := WriteEventfd(efd); err != nil {
		t.Fatal(err)
	}
	n, e := PollNow(epfd, evs)
	if n != 1 || e != 0 || slots.RefOf(&evs[0]) != want || evs[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("PollNow = %d, %v, ref %v, events %#x; want 1 EPOLLIN event of %v", n, e, slots.RefOf(&evs[0]), evs[0].Events, want)
	}
	evs[0] = unix.EpollEvent{}
	nb, e := WaitBlocking(epfd, evs, -1) // level-triggered: still readable
	if nb != 1 || e != 0 || slots.RefOf(&evs[0]) != want {
		t.Fatalf("WaitBlocking = %d, %v, ref %v; want 1 event of %v", nb, e, slots.RefOf(&evs[0]), want)
	}
	other := slots.MakeRef(3, 1)
	if err := Ctl(epfd, unix.EPOLL_CTL_MOD, efd, unix.EPOLLIN, other); err != nil {
		t.Fatal(err)
	}
	if n, _ := PollNow(epfd, evs); n != 1 || slots.RefOf(&evs[0]) != other {
		t.Fatalf("after EPOLL_CTL_MOD: %d events, ref %v; want %v", n, slots.RefOf(&evs[0]), other)
	}
	if err := Ctl(epfd, unix.EPOLL_CTL_ADD, efd, unix.EPOLLIN, want); err != unix.EEXIST {
		t.Errorf("second EPOLL_CTL_ADD error = %#v; want the bare errno EEXIST", err)
	}
	if err := Ctl(epfd, unix.EPOLL_CTL_DEL, efd, 0, 0); err != nil {
		t.Fatal(err)
	}
	if n, e := PollNow(epfd, evs); n != 0 || e != 0 {
		t.Errorf("PollNow after EPOLL_CTL_DEL = %d, %v; want 0, 0", n, e)
	}
	if n, e := WaitBlocking(epfd, evs, 0); n != 0 || e != 0 {
		t.Errorf("WaitBlocking(0 ms) with nothing registered = %d, %v; want 0, 0", n, e)
	}
}

func TestPollNowRefusesBadInput(t *testing.T) {
	if n, e := PollNow(newEpoll(t), nil); n != 0 || e != unix.EINVAL {
		t.Errorf("PollNow(epfd, nil) = %d, %v; want 0, EINVAL", n, e)
	}
	if _, e := PollNow(-1, make([]unix.EpollEvent, 1)); e != unix.EBADF {
		t.Errorf("PollNow(-1) errno = %v; want EBADF", e)
	}
	if _, e := WaitBlocking(-1, make([]unix.EpollEvent, 1), 0); e != unix.EBADF {
		t.Errorf("WaitBlocking(-1) errno = %v; want EBADF", e)
	}
	if n, e := WaitBlocking(newEpoll(t), nil, 0); n != 0 || e != unix.EINVAL {
		t.Errorf("WaitBlocking(epfd, nil) = %d, %v; want 0, EINVAL", n, e)
	}
}

func TestWriteEventfd(t *testing.T) {
	// A counter one short of saturation: the first write fills it, the
	// second is EAGAIN, which counts as success.
	efd := newEventfd(t, 0)
	almostFull := [8]byte{0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // 2^64-3, little-endian: one below the largest count
	if n, e := Write(efd, almostFull[:]); n != 8 || e != 0 {
		t.Fatalf("priming the counter: %d, %v", n, e)
	}
	for i := range 2 {
		if err := WriteEventfd(efd); err != nil {
			t.Fatalf("WriteEventfd #%d on a full counter: %v", i+1, err)
		}
	}
	if err := WriteEventfd(-1); err != unix.EBADF {
		t.Errorf("WriteEventfd(-1) = %v; want EBADF", err)
	}
}

func TestClocks(t *testing.T) {
	t0 := Nanotime()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := ThreadCPU(0)
	for Nanotime()-t0 < 2e6 { // spin 2 ms
	}
	cpu1 := ThreadCPU(0)
	if cpu0 < 0 || cpu1 <= cpu0 {
		t.Errorf("ThreadCPU(0) %d then %d across 2 ms of spinning; want it to grow", cpu0, cpu1)
	}
	if c := ThreadCPU(unix.Gettid()); c < cpu1 {
		t.Errorf("ThreadCPU(own tid) = %d, below ThreadCPU(0) = %d read before it", c, cpu1)
	}
	if c := ThreadCPU(1 << 22); c != -1 { // above pid_max's ceiling: no such thread
		t.Errorf("ThreadCPU(no such thread) = %d; want -1", c)
	}
	if d := Nanotime() - t0; d < 2e6 {
		t.Errorf("Nanotime advanced %d ns across a 2 ms spin", d)
	}
}
