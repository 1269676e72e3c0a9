//go:build linux

package reactortest

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// Client is a plain blocking frame client for tests: it sends frames and
// receives decoded ones under deadlines. Not safe for concurrent use.
type Client struct {
	Conn net.Conn
	dec  *wire.Decoder
	buf  []byte
	out  []byte
}

// Dial connects to addr within timeout.
func Dial(addr string, timeout time.Duration) (*Client, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &Client{Conn: c, dec: wire.NewDecoder(wire.DefaultMaxFrame), buf: make([]byte, 64<<10)}, nil
}

// Send writes one frame.
func (c *Client) Send(kind wire.Kind, token, seq uint64, payload []byte) error {
	c.out = wire.AppendFrame(c.out[:0], kind, 0, token, seq, MonoNow(), payload)
	c.Conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Conn.Write(c.out); err != nil {
		return fmt.Errorf("send %v seq %d: %w", kind, seq, err)
	}
	return nil
}

// Recv returns the next frame, waiting at most timeout. The payload is a
// copy. A timeout is reported as an error wrapping os.ErrDeadlineExceeded.
func (c *Client) Recv(timeout time.Duration) (wire.Header, []byte, error) {
	c.Conn.SetReadDeadline(time.Now().Add(timeout))
	for {
		h, p, ok, err := c.dec.Next()
		if err != nil {
			return h, nil, err
		}
		if ok {
			return h, append([]byte(nil), p...), nil
		}
		n, err := c.Conn.Read(c.buf)
		if err != nil {
			return wire.Header{}, nil, err
		}
		c.dec.Write(c.buf[:n])
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.Conn.Close() }

// IsTimeout reports whether err is a deadline expiry.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// WaitFor polls cond until it holds or timeout passes; it is for waiting on
// a reactor's published counters, which change without an event the test
// could block on. It reports whether cond held.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
	return true
}

// Settled waits until r's loops have made no epoll_wait call for settle
// (they are blocked: an idle reactor with deadline timers makes none), and
// reports whether that happened within timeout. The published counters lag
// the loop by up to a round, so a measurement window should start only
// after this.
func Settled(r *reactors.Reactor, settle, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	last := r.Stats().Counters.EpollWaits
	for time.Now().Before(deadline) {
		time.Sleep(settle) // observing a counter over a window: no event exists for "idle"
		now := r.Stats().Counters.EpollWaits
		if now == last {
			return true
		}
		last = now
	}
	return false
}

// SendBurst writes n DATA frames of payload (token, seq 1..n) in one write,
// so they reach the reactor together: one readiness event (one edge) for
// all of them.
func (c *Client) SendBurst(token uint64, n int, payload []byte) error {
	c.out = c.out[:0]
	for seq := 1; seq <= n; seq++ {
		c.out = wire.AppendFrame(c.out, wire.KindData, 0, token, uint64(seq), MonoNow(), payload)
	}
	c.Conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Conn.Write(c.out); err != nil {
		return fmt.Errorf("send a burst of %d frames: %w", n, err)
	}
	return nil
}

// RecvCount receives frames until n have come or none comes for idle, and
// returns how many came; the error is nil only when all n did.
func (c *Client) RecvCount(n int, idle time.Duration) (int, error) {
	for got := 0; got < n; got++ {
		if _, _, err := c.Recv(idle); err != nil {
			return got, fmt.Errorf("after %d of %d frames: %w", got, n, err)
		}
	}
	return n, nil
}

// SettledCounters returns r's counters once they show at least echoed
// frames echoed (a loop publishes its counters at most a millisecond late,
// so a client can see its last echo before the counters count it), or
// after timeout, whichever comes first.
func SettledCounters(r *reactors.Reactor, echoed uint64, timeout time.Duration) reactors.Counters {
	var c reactors.Counters
	WaitFor(timeout, func() bool {
		c = r.Stats().Counters
		return c.FramesEchoed >= echoed
	})
	return c
}

// DialBurst connects to r's data address and sends n DATA frames of 64-byte
// payloads in one write (SendBurst); the connection is closed when the test
// ends.
func DialBurst(t testing.TB, r *reactors.Reactor, n int) *Client {
	t.Helper()
	c, err := Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SendBurst(1, n, make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	return c
}
