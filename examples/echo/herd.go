//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// herdWait is how the herd bugs' threads wait on the listener: each in
// an epoll set of its own (herd), or each in poll(2) (herd-poll).
type herdWait int

const (
	herdEpoll herdWait = iota
	herdPoll
)

// waiters is how many threads wait on the listener: 4 in epoll sets, 2 in
// poll (a herd of two, which from outside looks like an acceptor that
// hands each connection to one loop unless its poll is seen).
func (w herdWait) waiters() int {
	if w == herdPoll {
		return 2
	}
	return 4
}

// name is the bug's name, for errors.
func (w herdWait) name() string {
	if w == herdPoll {
		return "herd-poll"
	}
	return "herd"
}

// herdListener is the herd bugs' data listener: how.waiters() threads,
// each locked to an OS thread of its own, wait on the one listening
// socket, each with an epoll set of its own that holds it,
// level-triggered and without EPOLLEXCLUSIVE (herd), or each in poll(2)
// (herd-poll, whose waits are never exclusive), so that every connection
// wakes every waiting thread (the thundering herd, as in tidwall/evio
// #73). The thread whose accept4 wins
// hands the connection to Accept; the others find EAGAIN, or the kernel
// sends them back to sleep before epoll_wait returns. The socket is made
// with raw system calls, so Go's own poller never waits on it.
type herdListener struct {
	how    herdWait
	fd     int // the listening socket, non-blocking
	stopFd int // an eventfd in every set: Close writes it, every thread wakes and exits
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// listenHerd listens on addr ("host:port", an IP address) for a herd
// bug and starts its waiting threads.
func listenHerd(addr string, how herdWait) (*herdListener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--bug %s: listen address %q: %w", how.name(), addr, err)
	}
	fd, bound, err := rawListen(ap)
	if err != nil {
		return nil, fmt.Errorf("--bug %s: listen on %s: %w", how.name(), addr, err)
	}
	stopFd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("--bug %s: eventfd: %w", how.name(), err)
	}
	l := &herdListener{how: how, fd: fd, stopFd: stopFd, addr: net.TCPAddrFromAddrPort(bound),
		conns: make(chan net.Conn, 64), closed: make(chan struct{})}
	ready := make(chan error, how.waiters())
	for range how.waiters() {
		l.wg.Add(1)
		if how == herdPoll {
			go l.poll(ready)
		} else {
			go l.wait(ready)
		}
	}
	for range how.waiters() {
		if err := <-ready; err != nil {
			l.Close()
			return nil, fmt.Errorf("--bug %s: %w", how.name(), err)
		}
	}
	return l, nil
}

// rawListen makes a non-blocking listening TCP socket on ap and returns
// it with the address it is bound to (the port chosen, for port 0).
func rawListen(ap netip.AddrPort) (int, netip.AddrPort, error) {
	family, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()})
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, ap, err
	}
	fail := func(what string, err error) (int, netip.AddrPort, error) {
		unix.Close(fd)
		return -1, ap, os.NewSyscallError(what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fail("setsockopt SO_REUSEADDR", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		return fail("listen", err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	switch s := got.(type) {
	case *unix.SockaddrInet4:
		return fd, netip.AddrPortFrom(netip.AddrFrom4(s.Addr), uint16(s.Port)), nil
	case *unix.SockaddrInet6:
		return fd, netip.AddrPortFrom(netip.AddrFrom16(s.Addr), uint16(s.Port)), nil
	}
	return fail("getsockname", errors.New("not an internet address"))
}

// wait is one waiting thread: it reports on ready whether its epoll set
// is made, then waits and accepts until Close.
func (l *herdListener) wait(ready chan<- error) {
	defer l.wg.Done()
	// Never unlocked: the thread ends with the goroutine.
	runtime.LockOSThread()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		ready <- os.NewSyscallError("epoll_create1", err)
		return
	}
	defer unix.Close(ep)
	for _, fd := range []int{l.fd, l.stopFd} {
		// The bug: no EPOLLEXCLUSIVE, in every thread's set.
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			ready <- os.NewSyscallError("epoll_ctl", err)
			return
		}
	}
	ready <- nil
	events := make([]unix.EpollEvent, 2)
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if err != nil && err != unix.EINTR {
			fmt.Fprintln(os.Stderr, "echo: --bug herd: epoll_wait:", err)
			return
		}
		for _, ev := range events[:max(n, 0)] {
			if int(ev.Fd) == l.stopFd {
				return
			}
		}
		if n > 0 && !l.acceptOne() {
			return
		}
	}
}

// poll is one waiting thread of herd-poll: it reports ready, then waits
// in poll(2) on the listener and the stop eventfd and accepts until
// Close.
func (l *herdListener) poll(ready chan<- error) {
	defer l.wg.Done()
	// Never unlocked: the thread ends with the goroutine.
	runtime.LockOSThread()
	ready <- nil
	for {
		fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}, {Fd: int32(l.stopFd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if err != nil && err != unix.EINTR {
			fmt.Fprintln(os.Stderr, "echo: --bug herd-poll: poll:", err)
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if n > 0 && fds[0].Revents != 0 && !l.acceptOne() {
			return
		}
	}
}

// acceptOne accepts one connection, if this thread wins it, and hands it
// to Accept; false once the listener is closed.
func (l *herdListener) acceptOne() bool {
	nfd, _, err := unix.Accept4(l.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR || err == unix.ECONNABORTED:
		return true // another thread took it
	case err != nil: // EMFILE and the like: wait, the lifetime bounds it all
		fmt.Fprintf(os.Stderr, "echo: --bug %s: accept4: %v\n", l.how.name(), err)
		time.Sleep(10 * time.Millisecond)
		return true
	}
	f := os.NewFile(uintptr(nfd), "herd connection")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo: --bug %s: %v\n", l.how.name(), err)
		return true
	}
	select {
	case l.conns <- conn:
		return true
	case <-l.closed:
		conn.Close()
		return false
	}
}

// Accept returns the next connection a waiting thread accepted.
func (l *herdListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close wakes every waiting thread to exit, waits for them, and closes
// the socket and what was accepted but not taken.
func (l *herdListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		unix.Write(l.stopFd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		l.wg.Wait()
		unix.Close(l.fd)
		unix.Close(l.stopFd)
		for len(l.conns) > 0 { // no thread is left to send more
			(<-l.conns).Close()
		}
	})
	return nil
}

// Addr is the address the listener is bound to.
func (l *herdListener) Addr() net.Addr { return l.addr }
