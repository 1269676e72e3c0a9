//go:build linux

// Package myloop is a tiny event loop of a module of its own: one thread,
// one level-triggered epoll set, serving a byte echo. It is the example of
// a Go server tested with reactorlab's conformance suite from a Go test
// (myloop_test.go).
//
// Each connection keeps what it has read and not yet written back (its
// pending bytes). While a connection holds highWater or more, the loop
// stops reading it, so a client that does not read its echoes is pushed
// back through TCP instead of growing the server's memory; a connection
// is read at most once per round, so a busy one cannot starve the others.
package myloop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"

	"golang.org/x/sys/unix"
)

// highWater is the most bytes a connection may hold pending before the
// loop stops reading it.
const highWater = 256 << 10

// Serve echoes every byte read on a connection accepted on ln, on the
// same connection, in order, until ctx is cancelled; then it closes every
// connection and returns ctx's error. ln must be a *net.TCPListener: the
// loop accepts on a duplicate of its descriptor.
func Serve(ctx context.Context, ln net.Listener) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("myloop: a %T is not a TCP listener", ln)
	}
	runtime.LockOSThread() // the loop's thread blocks in epoll_wait
	defer runtime.UnlockOSThread()
	lfd, err := dupListener(tl)
	if err != nil {
		return err
	}
	defer unix.Close(lfd)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("myloop: epoll_create1: %w", err)
	}
	defer unix.Close(ep)
	// The context's cancellation wakes the loop through an eventfd.
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("myloop: eventfd: %w", err)
	}
	defer unix.Close(wake)
	stop := context.AfterFunc(ctx, func() { _, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}) })
	defer stop()
	l := &loop{ep: ep, conns: map[int]*conn{}, buf: make([]byte, 64<<10)}
	defer l.closeAll()
	for _, fd := range []int{lfd, wake} {
		if err := l.ctl(unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN); err != nil {
			return err
		}
	}
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("myloop: epoll_wait: %w", err)
		}
		for _, ev := range events[:n] {
			switch fd := int(ev.Fd); fd {
			case wake:
				return ctx.Err()
			case lfd:
				l.accept(lfd)
			default:
				if c := l.conns[fd]; c != nil {
					l.serve(c, ev.Events)
				}
			}
		}
	}
}

// dupListener returns a non-blocking, close-on-exec duplicate of tl's
// descriptor.
func dupListener(tl *net.TCPListener) (int, error) {
	rc, err := tl.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("myloop: %w", err)
	}
	lfd, dupErr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { lfd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, fmt.Errorf("myloop: %w", err)
	}
	if dupErr != nil {
		return -1, fmt.Errorf("myloop: dup of the listener: %w", dupErr)
	}
	if err := unix.SetNonblock(lfd, true); err != nil {
		unix.Close(lfd)
		return -1, fmt.Errorf("myloop: %w", err)
	}
	return lfd, nil
}

// loop is the state of one Serve: its epoll set, its connections by
// descriptor, and the buffer every read goes through.
type loop struct {
	ep    int
	conns map[int]*conn
	buf   []byte
}

// conn is one connection: its bytes read and not yet written back, whether
// its peer has shut down its side (eof), and the events the epoll set
// watches for it.
type conn struct {
	fd       int
	pending  []byte
	eof      bool
	interest uint32
}

func (l *loop) ctl(op, fd int, events uint32) error {
	if err := unix.EpollCtl(l.ep, op, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)}); err != nil {
		return fmt.Errorf("myloop: epoll_ctl: %w", err)
	}
	return nil
}

// accept takes every connection waiting on the listener.
func (l *loop) accept(lfd int) {
	for {
		fd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN: none left; any other error is retried on the next event
		}
		c := &conn{fd: fd, interest: unix.EPOLLIN | unix.EPOLLRDHUP}
		if l.ctl(unix.EPOLL_CTL_ADD, fd, c.interest) != nil {
			unix.Close(fd)
			continue
		}
		l.conns[fd] = c
	}
}

// serve does one round's work for c: write what is pending, read once if
// it may, write again, then watch for what it waits for next (or close
// it once its peer is done and everything is written back).
func (l *loop) serve(c *conn, events uint32) {
	if events&unix.EPOLLERR != 0 {
		l.close(c)
		return
	}
	if !l.flush(c) {
		return
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP) != 0 && !c.eof && len(c.pending) < highWater {
		n, err := unix.Read(c.fd, l.buf)
		switch {
		case n > 0:
			c.pending = append(c.pending, l.buf[:n]...)
		case n == 0:
			c.eof = true
		case !errors.Is(err, unix.EAGAIN):
			l.close(c)
			return
		}
		if !l.flush(c) {
			return
		}
	}
	if c.eof && len(c.pending) == 0 {
		l.close(c)
		return
	}
	var want uint32
	if !c.eof && len(c.pending) < highWater {
		want |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if len(c.pending) > 0 {
		want |= unix.EPOLLOUT
	}
	if want != c.interest {
		c.interest = want
		if l.ctl(unix.EPOLL_CTL_MOD, c.fd, want) != nil {
			l.close(c)
		}
	}
}

// flush writes what c holds pending until the socket takes no more; it
// returns false when it closed c on a write error.
func (l *loop) flush(c *conn) bool {
	for len(c.pending) > 0 {
		n, err := unix.Write(c.fd, c.pending)
		if n > 0 {
			c.pending = c.pending[n:]
		}
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			l.close(c)
			return false
		}
	}
	if len(c.pending) == 0 {
		c.pending = nil // the next bytes start a buffer of their own
	}
	return true
}

func (l *loop) close(c *conn) {
	unix.Close(c.fd) // its last descriptor: the epoll set drops it too
	delete(l.conns, c.fd)
}

func (l *loop) closeAll() {
	for _, c := range l.conns {
		l.close(c)
	}
}
