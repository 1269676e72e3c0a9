//go:build linux

package conformance

import (
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPollWaitersSeesPollAndSelect: threads of this process blocked in
// poll and select with a listening socket in their read lists are
// counted, each once, whatever descriptor number they hold it by; a
// thread polling only another descriptor is not; once they return none
// is.
func TestPollWaitersSeesPollAndSelect(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File() // a second descriptor of the socket
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lfd := int(f.Fd())
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(stop)
	inodes, err := listenerInodes(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var sock string
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
	block(pollOn(lfd, stop))
	block(pollOn(stop, lfd))
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
	pids := []int{os.Getpid()}
	var got map[string]int
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if got, err = pollWaiters(pids, inodes); err != nil {
			t.Fatal(err)
		}
		if got[sock] >= 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got[sock] != 3 {
		t.Errorf("waiters on %s: %d (%v), want 3: two in poll, one in select", sock, got[sock], got)
	}
	unix.Write(stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	wg.Wait()
	if got, err = pollWaiters(pids, inodes); err != nil || got[sock] != 0 {
		t.Errorf("after the waiters returned: %v, %v; want none", got, err)
	}
}

// TestParseSyscallLine: a thread blocked in a call yields its number and
// arguments; a running one, or one outside a call, none.
func TestParseSyscallLine(t *testing.T) {
	nr, args, ok := parseSyscallLine("7 0x7ffc5a1b2c30 0x2 0xffffffffffffffff 0x0 0x0 0x0 0x7ffc5a1b2c18 0x7f3e1d2e4b2d\n")
	if !ok || nr != 7 || args[0] != 0x7ffc5a1b2c30 || args[1] != 2 || args[2] != 1<<64-1 {
		t.Errorf("poll line: %d %x %v", nr, args, ok)
	}
	for _, s := range []string{"running\n", "-1 0x7ffc5a1b2c18 0x7f3e1d2e4b2d\n", ""} {
		if _, _, ok := parseSyscallLine(s); ok {
			t.Errorf("%q: read as a blocked call", s)
		}
	}
}
