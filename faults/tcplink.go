package faults

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// TCPLink is a Link over a real TCP connection, for conformance cases and the
// load generator. It is one logical client: Reconnect replaces its connection
// (Generation counts them), and a pause of reading outlives reconnects.
//
// Every method is safe for concurrent use. The intended pattern is one goroutine
// playing a plan (Write, CloseWrite, Close, Reset, Reconnect, PauseReading) and
// one reading; concurrent Writes, or concurrent Reads, interleave as on a
// net.Conn. A Write or Read in progress when the connection is closed or
// replaced fails with that connection's error (net.ErrClosed for a local close);
// the next call uses the current connection.
type TCPLink struct {
	addr    string
	timeout time.Duration

	mu          sync.Mutex
	conn        *net.TCPConn
	gen         int
	closed      bool          // conn has been closed by Close, Reset or a failed Reconnect
	pausedUntil time.Time     // reading is paused until then
	interrupted bool          // conn's read deadline was set to interrupt a Read
	changed     chan struct{} // closed and replaced when a waiting Read must look again
}

// DialTCP connects to addr ("host:port"), giving up after timeout (0: no limit
// but the system's).
func DialTCP(addr string, timeout time.Duration) (*TCPLink, error) {
	c, err := dialTCP(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &TCPLink{addr: addr, timeout: timeout, conn: c, changed: make(chan struct{})}, nil
}

// NewTCPLink makes a link of conn, a connection to addr its caller dialled
// itself (with socket options of its own, set before the handshake). A
// Reconnect dials addr plainly, giving up after timeout.
func NewTCPLink(conn *net.TCPConn, addr string, timeout time.Duration) *TCPLink {
	return &TCPLink{addr: addr, timeout: timeout, conn: conn, changed: make(chan struct{})}
}

func dialTCP(addr string, timeout time.Duration) (*net.TCPConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// Conn returns the current connection; it changes after Reconnect.
func (l *TCPLink) Conn() *net.TCPConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

// Generation returns 0 for the first connection, +1 per successful Reconnect.
func (l *TCPLink) Generation() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// Write writes to the current connection.
func (l *TCPLink) Write(p []byte) (int, error) { return l.Conn().Write(p) }

// SetWriteDeadline sets the write deadline of the current connection (see
// WriteDeadliner).
func (l *TCPLink) SetWriteDeadline(t time.Time) error { return l.Conn().SetWriteDeadline(t) }

// CloseWrite shuts down the writing half of the current connection (FIN).
func (l *TCPLink) CloseWrite() error { return l.Conn().CloseWrite() }

// Close closes the current connection. It is idempotent: closing a closed
// connection returns nil. Reconnect may follow.
func (l *TCPLink) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeLocked(false)
}

// Reset closes the current connection with an RST: SO_LINGER 0, then close. On a
// closed connection it fails with an error wrapping net.ErrClosed.
func (l *TCPLink) Reset() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("reset: %w", net.ErrClosed)
	}
	return l.closeLocked(true)
}

func (l *TCPLink) closeLocked(rst bool) error {
	if l.closed {
		return nil
	}
	l.closed = true
	l.wakeLocked()
	var err error
	if rst {
		err = l.conn.SetLinger(0)
	}
	return errors.Join(err, l.conn.Close())
}

// Reconnect closes the current connection if still open and dials a new one to
// the same address, with DialTCP's timeout. On failure the link is left with a
// closed connection and the same generation. Other methods wait for the dial:
// a Read waiting out a pause then goes on with the new connection.
func (l *TCPLink) Reconnect() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.closeLocked(false)
	c, derr := dialTCP(l.addr, l.timeout)
	if derr != nil {
		return errors.Join(err, derr)
	}
	l.conn, l.closed, l.interrupted = c, false, false
	l.gen++
	return err
}

// PauseReading makes Read wait until d from now before reading; a pause already
// in effect is extended, never shortened. A Read blocked in the connection is
// interrupted and waits too; data it had already returned stays returned.
func (l *TCPLink) PauseReading(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := time.Now().Add(d); until.After(l.pausedUntil) {
		l.pausedUntil = until
	}
	if !l.closed && time.Now().Before(l.pausedUntil) {
		_ = l.conn.SetReadDeadline(time.Unix(1, 0)) // a failure only delays the pause to the next Read
		l.interrupted = true
	}
	l.wakeLocked()
}

func (l *TCPLink) wakeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Read waits while reading is paused, then reads from the current connection.
// The wait ends early, with net.ErrClosed, when the connection is closed. A read
// deadline set through Conn is reported as is.
func (l *TCPLink) Read(p []byte) (int, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return 0, net.ErrClosed
		}
		wait, changed, conn := time.Until(l.pausedUntil), l.changed, l.conn
		if wait <= 0 && l.interrupted {
			l.interrupted = false
			_ = conn.SetReadDeadline(time.Time{}) // a failure shows in the Read below
		}
		l.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-changed:
			}
			t.Stop()
			continue
		}
		n, err := conn.Read(p)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && l.wasInterrupted() {
			continue
		}
		return n, err
	}
}

// wasInterrupted reports whether PauseReading has set the read deadline that
// expired, rather than a caller through Conn.
func (l *TCPLink) wasInterrupted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.interrupted
}
