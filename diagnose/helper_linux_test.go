//go:build linux

package diagnose_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv names the mode the test binary runs in when a test starts it
// as a target: a small event loop on one locked thread, doing one thing
// wrong or right, so that a class is known before it is diagnosed.
const helperEnv = "DIAGNOSE_TEST_HELPER"

// runHelper runs the helper mode named by helperEnv, if any, and exits;
// it prints "ready ADDR" on stdout once its loop runs. Every mode ends by
// itself after a minute.
func runHelper() {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	go func() {
		time.Sleep(time.Minute)
		os.Exit(3)
	}()
	runtime.LockOSThread()
	var err error
	switch mode {
	case "sleep-loop":
		err = sleepLoop()
	case "epollout-spin":
		err = epolloutSpin()
	case "timer-work":
		err = timerWork()
	case "zero-timeout":
		err = zeroTimeout()
	case "self-wake":
		err = selfWake()
	case "handoff":
		err = handoff()
	case "emfile-spin":
		err = emfileLoop(false)
	case "emfile-shed":
		err = emfileLoop(true)
	case "unread-spin":
		err = readableLoop(false)
	case "unread-read":
		err = readableLoop(true)
	default:
		if h, ok := archHelpers[mode]; ok {
			err = h()
		} else {
			err = fmt.Errorf("unknown mode %q", mode)
		}
	}
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(2)
}

// listen is a blocking listening socket on loopback made with system
// calls (Go's poller never sees it) and its address: REACTORLAB_LISTEN's
// when that is an IPv4 address and port (a truth-table row), else a port
// the kernel picks.
func listen() (int, string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	sa := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if a, err := netip.ParseAddrPort(os.Getenv("REACTORLAB_LISTEN")); err == nil && a.Addr().Is4() {
		sa = &unix.SockaddrInet4{Addr: a.Addr().As4(), Port: int(a.Port())}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return -1, "", err
	}
	if err := unix.Listen(fd, 16); err != nil {
		return -1, "", err
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return -1, "", err
	}
	return fd, fmt.Sprintf("127.0.0.1:%d", got.(*unix.SockaddrInet4).Port), nil
}

// acceptOne prints "ready ADDR", accepts one connection and returns it
// with an epoll set holding it for events.
func acceptOne(events uint32) (conn, ep int, err error) {
	lfd, addr, err := listen()
	if err != nil {
		return -1, -1, err
	}
	fmt.Println("ready", addr)
	if conn, _, err = unix.Accept4(lfd, unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK); err != nil {
		return -1, -1, err
	}
	if ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return -1, -1, err
	}
	return conn, ep, unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, conn, &unix.EpollEvent{Events: events, Fd: int32(conn)})
}

// sleepLoop is a loop that sleeps in nanosleep between its waits and
// never reads: its connection, held edge-triggered, keeps what the client
// sent unread, and each round waits 30 ms for a new edge, then sleeps 100
// ms. It is blocked in nanosleep while work waits.
func sleepLoop() error {
	_, ep, err := acceptOne(unix.EPOLLIN | unix.EPOLLET)
	if err != nil {
		return err
	}
	evs := make([]unix.EpollEvent, 8)
	for {
		if _, err := unix.EpollWait(ep, evs, 30); err != nil && err != unix.EINTR {
			return err
		}
		ts := unix.NsecToTimespec(int64(100 * time.Millisecond))
		unix.Nanosleep(&ts, nil)
	}
}

// epolloutSpin is a loop that holds its idle connection for EPOLLOUT,
// level-triggered, with nothing to send: every wait returns at once.
func epolloutSpin() error {
	_, ep, err := acceptOne(unix.EPOLLIN | unix.EPOLLOUT)
	if err != nil {
		return err
	}
	evs := make([]unix.EpollEvent, 8)
	for {
		if _, err := unix.EpollWait(ep, evs, -1); err != nil && err != unix.EINTR {
			return err
		}
	}
}

// timerWork is a loop that first waits 300 ms on its epoll set with
// nothing due (so that the samples find it in its wait), then works: its
// timerfd expires every millisecond and each round works 3 ms of CPU, so
// it wants a CPU all the time and never spins (its waits return at once
// because work is due, and it reads the timer each round).
func timerWork() error {
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(tfd)}); err != nil {
		return err
	}
	fmt.Println("ready -")
	evs := make([]unix.EpollEvent, 8)
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		if _, err := unix.EpollWait(ep, evs, int(time.Until(end).Milliseconds())+1); err != nil && err != unix.EINTR {
			return err
		}
	}
	ms := unix.NsecToTimespec(int64(time.Millisecond))
	if err := unix.TimerfdSettime(tfd, 0, &unix.ItimerSpec{Interval: ms, Value: ms}, nil); err != nil {
		return err
	}
	buf := make([]byte, 8)
	x := uint64(1)
	for {
		if _, err := unix.EpollWait(ep, evs, -1); err != nil && err != unix.EINTR {
			return err
		}
		unix.Read(tfd, buf)
		for end := time.Now().Add(3 * time.Millisecond); time.Now().Before(end); {
			for range 1000 {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
			}
		}
		workSink = x
	}
}

// zeroTimeout is a loop that polls an empty epoll set with a zero
// timeout, never blocking.
func zeroTimeout() error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	fmt.Println("ready -")
	evs := make([]unix.EpollEvent, 8)
	for {
		if _, err := unix.EpollWait(ep, evs, 0); err != nil && err != unix.EINTR {
			return err
		}
	}
}

// selfWakeEvery is how often self-wake's second thread hands its loop an
// empty task: 10,000 a second, each a wakeup that carries no work.
const selfWakeEvery = 100 * time.Microsecond

// selfWake is a byte-echo loop on one thread (level-triggered, every
// connection read and written back in turn, EPOLLOUT held only while
// bytes wait) whose epoll set also holds an eventfd that a second thread
// of the process writes every selfWakeEvery with nothing for the loop to
// do: each write wakes the loop, which reads the eventfd and waits again.
// Idle or lightly loaded, its wakeups far outnumber the segments its
// sockets receive, and each follows an 8-byte write by its own thread.
func selfWake() error {
	lfd, addr, err := listen()
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(lfd, true); err != nil {
		return err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	for _, fd := range []int{lfd, efd} {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return err
		}
	}
	go func() {
		runtime.LockOSThread()
		one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
		ts := unix.NsecToTimespec(int64(selfWakeEvery))
		for {
			unix.Write(efd, one)
			unix.Nanosleep(&ts, nil)
		}
	}()
	fmt.Println("ready", addr)
	pending := map[int][]byte{} // connection → bytes read, not yet written back
	evs := make([]unix.EpollEvent, 64)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.EpollWait(ep, evs, -1)
		if err != nil && err != unix.EINTR {
			return err
		}
		for _, ev := range evs[:max(n, 0)] {
			fd := int(ev.Fd)
			switch fd {
			case efd:
				unix.Read(efd, buf[:8])
			case lfd:
				for {
					c, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
					if err != nil {
						break
					}
					unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, c, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c)})
				}
			default:
				if ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 && len(pending[fd]) == 0 {
					k, err := unix.Read(fd, buf)
					if k <= 0 && err != unix.EAGAIN {
						unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
						unix.Close(fd)
						delete(pending, fd)
						continue
					}
					if k > 0 {
						pending[fd] = append(pending[fd], buf[:k]...)
					}
				}
				if out := pending[fd]; len(out) > 0 {
					k, _ := unix.Write(fd, out)
					pending[fd] = out[max(k, 0):]
					events := uint32(unix.EPOLLIN)
					if len(pending[fd]) > 0 {
						events = unix.EPOLLOUT
					}
					unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)})
				}
			}
		}
	}
}

// handoff is a byte echo on two threads: a poller whose epoll set holds
// the listener and the connections reads whatever arrives and hands it,
// with one eventfd token per read, to a worker whose epoll set holds only
// that eventfd; the worker writes each piece back. Every wakeup of the
// worker carries work a segment brought: it is woken by its own process's
// tokens, never for nothing.
func handoff() error {
	lfd, addr, err := listen()
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(lfd, true); err != nil {
		return err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return err
	}
	pollEp, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	workEp, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(pollEp, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return err
	}
	if err := unix.EpollCtl(workEp, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}); err != nil {
		return err
	}
	type piece struct {
		fd   int
		data []byte
	}
	var (
		mu    sync.Mutex
		queue []piece
	)
	go func() { // the worker
		runtime.LockOSThread()
		evs := make([]unix.EpollEvent, 4)
		buf := make([]byte, 8)
		for {
			if _, err := unix.EpollWait(workEp, evs, -1); err != nil && err != unix.EINTR {
				return
			}
			unix.Read(efd, buf)
			mu.Lock()
			work := queue
			queue = nil
			mu.Unlock()
			for _, p := range work {
				for out := p.data; len(out) > 0; {
					k, err := unix.Write(p.fd, out)
					if err == unix.EAGAIN {
						continue
					}
					if err != nil {
						break
					}
					out = out[k:]
				}
			}
		}
	}()
	fmt.Println("ready", addr)
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	evs := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(pollEp, evs, -1)
		if err != nil && err != unix.EINTR {
			return err
		}
		for _, ev := range evs[:max(n, 0)] {
			fd := int(ev.Fd)
			if fd == lfd {
				for {
					c, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
					if err != nil {
						break
					}
					unix.EpollCtl(pollEp, unix.EPOLL_CTL_ADD, c, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c)})
				}
				continue
			}
			data := make([]byte, 64<<10)
			k, err := unix.Read(fd, data)
			if k <= 0 {
				if err != unix.EAGAIN {
					unix.EpollCtl(pollEp, unix.EPOLL_CTL_DEL, fd, nil)
				}
				continue
			}
			mu.Lock()
			queue = append(queue, piece{fd, data[:k]})
			mu.Unlock()
			unix.Write(efd, one)
		}
	}
}

// archHelpers are the helper modes of one architecture's system calls
// (poll(2) is amd64's, not arm64's), by mode.
var archHelpers = map[string]func() error{}

// readableLoop is a loop that holds its one connection level-triggered
// for EPOLLIN and waits on its set with no timeout. Without read it
// never reads: once its client has sent anything, the connection stays
// readable, every wait returns at once for it and the bytes stay in the
// receive queue, a spin. With read it reads what each wait reports, as a
// correct loop does.
func readableLoop(read bool) error {
	conn, ep, err := acceptOne(unix.EPOLLIN)
	if err != nil {
		return err
	}
	evs := make([]unix.EpollEvent, 8)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.EpollWait(ep, evs, -1)
		if err != nil && err != unix.EINTR {
			return err
		}
		if read && n > 0 {
			if k, err := unix.Read(conn, buf); k == 0 && err == nil {
				return fmt.Errorf("the client closed")
			}
		}
	}
}

// emfileLimit is the soft RLIMIT_NOFILE the EMFILE helpers set before
// they fill their descriptor tables: small, so that filling it is quick.
const emfileLimit = 64

// emfileLoop is a loop whose descriptor table is full: it lowers its soft
// RLIMIT_NOFILE to emfileLimit, holds its non-blocking listener in its
// epoll set for EPOLLIN, level-triggered, fills the table with
// descriptors of /dev/null until EMFILE, and accepts whenever its set
// says the listener is ready. Every accept fails with EMFILE while
// connections wait. Without shed it tries again at once: each wait
// returns at once, a spin. With shed it does what a correct server does:
// it takes the listener out of its set on EMFILE, waits 100 ms on the set
// (nothing else is in it), and puts the listener back to try again.
func emfileLoop(shed bool) error {
	// A timer makes the runtime open its poller's descriptors (its epoll
	// set and eventfd); once the table is full it could not, and would
	// die.
	time.Sleep(time.Millisecond)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: emfileLimit, Max: emfileLimit}); err != nil {
		return err
	}
	lfd, addr, err := listen()
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(lfd, true); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	listener := &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, listener); err != nil {
		return err
	}
	for {
		_, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EMFILE {
			break
		}
		if err != nil {
			return err
		}
	}
	fmt.Println("ready", addr)
	evs := make([]unix.EpollEvent, 8)
	timeout := -1
	for {
		n, err := unix.EpollWait(ep, evs, timeout)
		if err != nil && err != unix.EINTR {
			return err
		}
		if shed && n <= 0 && timeout >= 0 {
			if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, listener); err != nil {
				return err
			}
			timeout = -1
			continue
		}
		if n <= 0 {
			continue
		}
		c, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
		if err == nil {
			unix.Close(c)
			continue
		}
		if err == unix.EMFILE && shed {
			if err := unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, lfd, nil); err != nil {
				return err
			}
			timeout = 100
		}
	}
}

// workSink keeps timerWork's arithmetic from being optimised away.
var workSink uint64

// dialHelper connects to a helper's address.
func dialHelper(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 5*time.Second) }
