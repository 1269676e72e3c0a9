//go:build linux

package cases

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// rawListener is a blocking listening socket on 127.0.0.1, made with
// system calls (Go's poller never waits on it), and its address.
func rawListener(t *testing.T) (int, string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port)).String()
}

// TestThreadWaitersSeesPollSelectAndAccept: threads of this process
// blocked in poll and select with a listening socket in their read lists
// are counted as pollers, each once, whatever descriptor number they hold
// it by, and one blocked in accept on it as an acceptor; a thread polling
// only another descriptor is not counted; once they return none is.
func TestThreadWaitersSeesPollSelectAndAccept(t *testing.T) {
	lfd, addr := rawListener(t)
	dup, err := unix.Dup(lfd) // a second descriptor of the socket
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(stop)
	inodes, err := listenerInodes(addr)
	if err != nil {
		t.Fatal(err)
	}
	var sock uint64
	for s := range inodes {
		sock = s
	}
	var wg sync.WaitGroup
	block := func(wait func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			wait()
		}()
	}
	pollOn := func(fds ...int) func() {
		return func() {
			var p []unix.PollFd
			for _, fd := range fds {
				p = append(p, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
			for {
				if _, err := unix.Poll(p, 5000); err != unix.EINTR {
					return
				}
			}
		}
	}
	block(pollOn(stop, -1, lfd)) // a negative entry too: poll ignores it
	block(pollOn(stop, dup))
	block(pollOn(stop)) // not on the listener
	block(func() {
		for {
			var rset unix.FdSet
			rset.Set(lfd)
			rset.Set(stop)
			if _, err := unix.Select(max(lfd, stop)+1, &rset, nil, nil, &unix.Timeval{Sec: 5}); err != unix.EINTR {
				return
			}
		}
	})
	block(func() {
		for {
			nfd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
			if err == nil {
				unix.Close(nfd)
			}
			if err != unix.EINTR {
				return
			}
		}
	})
	want := threadWaits{pollers: 3, acceptors: 1}
	pids := []int{os.Getpid()}
	var got map[uint64]threadWaits
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if got, err = threadWaiters(pids, inodes); err != nil {
			t.Fatal(err)
		}
		if got[sock] == want {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got[sock] != want {
		t.Errorf("waiters on socket:[%d]: %+v (%v), want %+v: two in poll, one in select, one in accept", sock, got[sock], got, want)
	}
	unix.Write(stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	cfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cfd)
	sa, _ := unix.Getsockname(lfd)
	if err := unix.Connect(cfd, sa); err != nil { // the acceptor's connection
		t.Fatal(err)
	}
	wg.Wait()
	if got, err = threadWaiters(pids, inodes); err != nil || got[sock] != (threadWaits{}) {
		t.Errorf("after the waiters returned: %v, %v; want none", got, err)
	}
}

// TestEpollInstancesCountsEachOnce: an epoll descriptor, its dup and a
// child's inherited copy are one instance (one waiter for the kernel), a
// second epoll set another; with and without EPOLLEXCLUSIVE counted apart.
func TestEpollInstancesCountsEachOnce(t *testing.T) {
	ep := func() int {
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	a, b, x := ep(), ep(), ep()
	aDup, err := unix.Dup(a)
	if err != nil {
		t.Fatal(err)
	}
	aDupFile := os.NewFile(uintptr(aDup), "epoll dup") // closes aDup
	defer aDupFile.Close()
	pid := os.Getpid()
	if same, err := procfs.SameFile(pid, a, pid, aDup); err != nil || !same {
		t.Fatalf("kcmp of an epoll descriptor and its dup: %v, %v; want the same file", same, err)
	}
	if same, err := procfs.SameFile(pid, a, pid, b); err != nil || same {
		t.Fatalf("kcmp of two epoll sets: %v, %v; want different files", same, err)
	}
	// A child that inherited a as its descriptor 3 holds the same
	// instance (a pre-forked worker that never waits on it, or waits on
	// it with the others: one waiter for the kernel either way).
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{aDupFile}
	if err := child.Start(); err != nil {
		t.Skipf("no child to inherit the descriptor: %v", err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	cpid := child.Process.Pid
	refs := []epollRef{{pid: pid, fd: a}, {pid: pid, fd: aDup}, {pid: cpid, fd: 3}, {pid: pid, fd: b}, {pid: pid, fd: x, exclusive: true}}
	plain, exclusive, err := epollInstances(refs)
	if err != nil || plain != 2 || exclusive != 1 {
		t.Errorf("instances of %v: %d plain, %d exclusive, %v; want 2, 1", refs, plain, exclusive, err)
	}
}

// TestListenerWaitsSharers: the waiters woken for every connection are
// the plain sets and the pollers, and one of the exclusive waiters if
// there is any.
func TestListenerWaitsSharers(t *testing.T) {
	for _, tc := range []struct {
		w    listenerWaits
		want int
	}{
		{listenerWaits{plain: 1}, 1},
		{listenerWaits{exclusive: 4}, 1},
		{listenerWaits{acceptors: 2}, 1},
		{listenerWaits{plain: 1, exclusive: 3}, 2},
		{listenerWaits{pollers: 1, acceptors: 1}, 2},
		{listenerWaits{plain: 2, pollers: 1}, 3},
		{listenerWaits{}, 0},
	} {
		if got := tc.w.sharers(); got != tc.want {
			t.Errorf("%s: %d sharers, want %d", fmt.Sprint(tc.w), got, tc.want)
		}
	}
}
