//go:build linux

package main

import (
	"io"
	"net"
	"time"
)

// How the server ends its connections when it stops: drainFor bounds the
// wait for a client's FIN after the server's own; a handler still running
// forceAfter past that is closed.
const (
	drainFor   = 3 * time.Second
	forceAfter = time.Second
	// keepConnsFor bounds the keep-conns-on-term bug's wait for its
	// clients, so that the process still ends by itself.
	keepConnsFor = time.Minute
)

// stop stops the server (SIGTERM, SIGINT or the lifetime): it closes the
// listeners (so new connections are refused) and ends every connection
// (endConn), waits for the handlers, and closes what is left. The bugs of
// the stop contract change one step each.
func (s *server) stop(listeners []net.Listener) {
	s.mu.Lock()
	s.stopping = true
	var conns []net.Conn
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	closeListeners := func() {
		for _, l := range listeners {
			l.Close()
		}
		s.accepting.Wait()
	}
	if s.bug != "serve-after-term" {
		closeListeners()
	}
	wait := drainFor + forceAfter
	if s.bug == "keep-conns-on-term" {
		wait = keepConnsFor // the bug: the connections are left as they are
	} else {
		for _, c := range conns {
			s.endConn(c)
		}
	}
	handlersDone := make(chan struct{})
	go func() { s.wg.Wait(); close(handlersDone) }()
	select {
	case <-handlersDone:
	case <-time.After(wait):
	}
	if s.bug == "serve-after-term" {
		closeListeners()
	}
	s.closeAll()
}

// endConn makes c's handler end: its blocked read returns at once (what
// it had read is written back, a write in progress finishes), and
// serve then half-closes and drains it (endGracefully). With rst-on-term
// it is reset instead; with drop-on-term its writer stops at once too,
// and what it holds is dropped.
func (s *server) endConn(c net.Conn) {
	now := time.Now()
	switch s.bug {
	case "rst-on-term":
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // close sends RST
		}
		c.Close()
	case "drop-on-term":
		c.SetWriteDeadline(now)
		c.SetReadDeadline(now)
	default:
		c.SetReadDeadline(now)
	}
}

// endGracefully ends a connection whose echoes are all written: FIN
// (half-close), then what the client still sends is read and discarded
// until its FIN, for at most drainFor, so that the close that follows has
// no unread data to answer with RST.
// With closeAtFIN (the close-at-fin-on-term bug) it returns after the FIN,
// and the close that follows resets what the client sends next.
func endGracefully(c net.Conn, closeAtFIN bool) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	if closeAtFIN {
		return
	}
	c.SetReadDeadline(time.Now().Add(drainFor))
	io.Copy(io.Discard, c)
}

// echoWhenDataIdle is the slow-control bug's control echo: each read is
// written back only once no data connection has read anything for 100
// ms (or the connection is being ended), as a server that serves control
// only when its data plane is idle.
func (s *server) echoWhenDataIdle(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		for n > 0 && time.Since(time.Unix(0, s.lastDataRead.Load())) < 100*time.Millisecond {
			time.Sleep(time.Millisecond)
		}
		if n > 0 {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
