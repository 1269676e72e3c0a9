//go:build linux

package reactors_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// The fault-hook detectors of the write path and of EOF (faulthooks_linux_test.go
// has the rows): EPOLLOUT, backpressure and short writes (W), echoes
// owed at a half-close (I3, W4).

// detectIdleBusyLoop: ten connections, each echoed once, then idle. With
// deadline timers and nothing due an idle loop makes no epoll_wait calls;
// allow 3 for the window's edges.
func detectIdleBusyLoop(r *reactors.Reactor) error {
	for i := 0; i < 10; i++ {
		c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.Send(wire.KindData, 1, 1, []byte("x")); err != nil {
			return err
		}
		if _, _, err := c.Recv(5 * time.Second); err != nil {
			return err
		}
	}
	// Let the last rounds finish and be published (a busy-looping mutant
	// never settles).
	if !reactortest.Settled(r, 20*time.Millisecond, 2*time.Second) {
		c := r.Stats().Counters
		return fmt.Errorf("never idle: %d epoll_waits, %d EPOLLOUT events with an empty queue", c.EpollWaits, c.EpolloutEmpty)
	}
	w0 := r.Stats().Counters
	time.Sleep(200 * time.Millisecond) // a measurement window
	w1 := r.Stats().Counters
	if waits := w1.EpollWaits - w0.EpollWaits; waits > 3 {
		return fmt.Errorf("idle: %d epoll_waits in 200 ms (%d zero-timeout, %d blocking, %d idle wakeups; events %d: in %d, out %d with empty queue %d, err %d; timers %d, ingress %d)",
			waits, w1.ZeroTimeoutWaits-w0.ZeroTimeoutWaits, w1.BlockingWaits-w0.BlockingWaits, w1.IdleWakeups-w0.IdleWakeups,
			w1.Events-w0.Events, w1.EventsIn-w0.EventsIn, w1.EventsOut-w0.EventsOut, w1.EpolloutEmpty-w0.EpolloutEmpty,
			w1.EventsErr-w0.EventsErr, w1.TimersFired-w0.TimersFired, w1.IngressItems-w0.IngressItems)
	}
	return nil
}

// detectSlowConsumer: a client that writes without reading; the reactor
// must stop reading once the out-queue passes the high watermark, holding
// at most high watermark + one turn's bytes + two frames; after the client
// resumes, every echo arrives intact and in order.
func detectSlowConsumer(r *reactors.Reactor) error {
	cfg := r.Config()
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	const payload = 4096
	var sent int
	for {
		c.Conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Conn.Write(dataFrames(1, sent, 1, payload)); err != nil {
			if reactortest.IsTimeout(err) {
				break // kernel buffers full: the reactor stopped reading
			}
			return err
		}
		sent++
		if sent*payload > 64<<20 {
			return fmt.Errorf("wrote %d MiB without blocking: the reactor never stopped reading", sent*payload>>20)
		}
	}
	st := r.Stats().Counters
	held := int64(st.BytesIn) - int64(st.BytesOut)
	bound := int64(cfg.OutHigh + cfg.Budgets.Bytes + 2*(payload+wire.HeaderSize))
	if st.BackpressureOn == 0 || held > bound {
		return fmt.Errorf("backpressure pauses %d; reactor holds %d bytes, bound %d", st.BackpressureOn, held, bound)
	}
	c.Conn.SetWriteDeadline(time.Time{})
	return expectEchoes(c, 1, sent, payload, 10*time.Second, "slow consumer")
}

// detectShortWrites (W3): DATA frames, 1 MiB at a time, from a client that
// reads nothing until the reactor's socket has stopped taking its echoes
// (the reactor holds 1 MiB more than it wrote: its writes came up short and
// the rest waits in the out-queue); then every echo must arrive intact and
// in order.
func detectShortWrites(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	const size = 64 << 10
	sent, err := fillOutQueue(r, c.Conn, 4, size, 1<<20, 48<<20, "short writes")
	if err != nil {
		return err
	}
	return expectEchoes(c, 4, len(sent)/(wire.HeaderSize+size), size, 2*time.Second, "short writes")
}

// queueEchoes sends DATA frames on c (a client with a small receive
// buffer that reads nothing), 64 KiB at a time, until the reactor has read
// them all and holds at least 256 KiB of their echoes in its out-queue
// (the kernel's buffers took the rest; the default high watermark, 1 MiB,
// is not reached, so the reactor goes on reading). It returns what it sent.
func queueEchoes(r *reactors.Reactor, c net.Conn) ([]byte, error) {
	return fillOutQueue(r, c, 11, 4<<10, 256<<10, 16<<20, "queueing echoes")
}

// fillOutQueue writes DATA frames of size bytes (dataFrames, token), 16 at
// a time, on c, a client that reads nothing, until the reactor has read
// them all and holds at least queued bytes more than it wrote: echoes in
// its out-queue that the kernel's buffers did not take. Past maxSent bytes
// sent it gives up with an error wrapping errNotShown: nothing was
// queued. It returns the stream sent.
func fillOutQueue(r *reactors.Reactor, c net.Conn, token uint64, size int, queued, maxSent uint64, what string) ([]byte, error) {
	const perChunk = 16
	c0 := r.Stats().Counters
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	var sent []byte
	for n := 0; ; n += perChunk {
		chunk := dataFrames(token, n, perChunk, size)
		if _, err := c.Write(chunk); err != nil {
			return nil, fmt.Errorf("%s: writing frames %d..%d: %w", what, n, n+perChunk-1, err)
		}
		sent = append(sent, chunk...)
		var held uint64
		if !reactortest.WaitFor(2*time.Second, func() bool {
			c := r.Stats().Counters
			held = (c.BytesIn - c0.BytesIn) - (c.BytesOut - c0.BytesOut)
			return c.BytesIn-c0.BytesIn >= uint64(len(sent))
		}) {
			return nil, fmt.Errorf("%s: the reactor read %d of %d bytes", what, r.Stats().Counters.BytesIn-c0.BytesIn, len(sent))
		}
		if held >= queued {
			return sent, nil
		}
		if uint64(len(sent)) >= maxSent {
			return nil, fmt.Errorf("%w: %s: the kernel took all %d bytes of echoes unread (%d held): nothing was queued", errNotShown, what, len(sent), held)
		}
	}
}

// dialSmallReceiveBuffer connects to addr with a 4 KiB receive buffer set
// before the handshake (so the window it advertises is small too): the
// echoes it does not read back up in the server sooner.
func dialSmallReceiveBuffer(addr string) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return os.NewSyscallError("setsockopt SO_RCVBUF", serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return c.(*net.TCPConn), nil
}

// readEchoesToEOF reads c until EOF (or timeout) and checks that it
// received exactly sent, in order, before the EOF.
func readEchoesToEOF(c net.Conn, sent []byte, timeout time.Duration) error {
	c.SetReadDeadline(time.Now().Add(timeout))
	got, err := io.ReadAll(c)
	switch {
	case err != nil:
		return fmt.Errorf("after the half-close: %d of %d bytes echoed, then %w", len(got), len(sent), err)
	case !bytes.Equal(got, sent):
		return fmt.Errorf("after the half-close: %d of %d bytes echoed before EOF (intact prefix %v)", len(got), len(sent), bytes.HasPrefix(sent, got))
	}
	return nil
}

// detectEOFWithQueuedEchoes (I3; with bigOutQueue, no backpressure): a
// client with a small receive buffer has the reactor queue more echoes
// than the kernel's largest send buffer takes (tcp_wmem's maximum + 512
// KiB), then shuts down its write side and reads: every echo must arrive,
// then EOF. However autotuning grows the socket's buffer before the
// reactor reads the FIN (the FIN's arrival can let it grow), echoes are
// still queued when the reactor reads it, for a mutant to drop.
func detectEOFWithQueuedEchoes(r *reactors.Reactor) error {
	wmemMax, err := maxSendBuffer()
	if err != nil {
		return err
	}
	c, err := dialSmallReceiveBuffer(r.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	sent, err := fillOutQueue(r, c, 11, 4<<10, wmemMax+512<<10, 64<<20, "queueing echoes")
	if err != nil {
		return err
	}
	if err := c.CloseWrite(); err != nil {
		return err
	}
	return readEchoesToEOF(c, sent, 20*time.Second)
}

// maxSendBuffer is the largest send buffer TCP autotuning gives a socket
// (the third field of /proc/sys/net/ipv4/tcp_wmem), in bytes.
func maxSendBuffer() (uint64, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, fmt.Errorf("tcp_wmem: %q, want three fields", b)
	}
	return strconv.ParseUint(f[2], 10, 64)
}

// detectEOFInEchoingTurn (I3; the reactor comes unstarted): a client
// sends four DATA frames and shuts down its write side before the reactor
// runs, so the reactor's first turn on the connection reads the frames
// and the EOF together, queueing the echoes in the same turn that sees
// the EOF; every echo must arrive, then EOF.
func detectEOFInEchoingTurn(r *reactors.Reactor) error {
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	sent := dataFrames(11, 0, 4, 4<<10)
	if _, err := c.Conn.Write(sent); err != nil {
		return err
	}
	if err := c.Conn.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	r.Start()
	return readEchoesToEOF(c.Conn, sent, 5*time.Second)
}

// detectFlushSpinAtEOF (W4): client A, with a small receive buffer, has
// the reactor queue echoes it does not read (queueEchoes: some 3 MiB
// sent, 256 KiB or more queued) and shuts down its write side: the
// reactor reads the EOF with echoes queued for a peer that does not read.
// Then three PING round trips of client B must each be answered within
// 1 s: A's bytes were all read before its FIN, which keeps A readable, so
// the reactor reads A's EOF in the first round that can serve B's PING,
// or the next. Closing A at the end resets it, which ends a mutant's spin.
func detectFlushSpinAtEOF(r *reactors.Reactor) error {
	c0 := r.Stats().Counters
	a, err := dialSmallReceiveBuffer(r.Addr().String())
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := queueEchoes(r, a); err != nil {
		return err
	}
	if err := a.CloseWrite(); err != nil {
		return err
	}
	b, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer b.Close()
	for seq := uint64(0); seq < 3; seq++ {
		if err := b.Send(wire.KindPing, 12, seq, nil); err != nil {
			return err
		}
		if _, _, err := b.Recv(time.Second); err != nil {
			return fmt.Errorf("flush spin: client B's PING %d unanswered in 1 s while half-closed A, with echoes queued, does not read: %w", seq, err)
		}
	}
	st := r.Stats().Counters
	if held := (st.BytesIn - c0.BytesIn) - (st.BytesOut - c0.BytesOut); held == 0 {
		return fmt.Errorf("%w: flush spin: A's echoes all left the out-queue: nothing was queued at its EOF", errNotShown)
	}
	return nil
}

// detectBlockOnFullWrite (W5): client A, with a small receive buffer,
// keeps sending DATA frames and never reads (nor half-closes), so that the
// reactor's writes back to it come back short and its out-queue backs up;
// meanwhile three PING round trips of client B must each be answered
// within 1 s. Closing A at the end resets it, which ends a mutant's wait.
func detectBlockOnFullWrite(r *reactors.Reactor) error {
	a, err := dialSmallReceiveBuffer(r.Addr().String())
	if err != nil {
		return err
	}
	defer a.Close()
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() { // A's sender: frames until told to stop or blocked for good
		frame := wire.AppendFrame(nil, wire.KindData, 0, 21, 0, 0, make([]byte, 16<<10))
		for {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			a.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := a.Write(frame); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				wrote <- err
				return
			}
		}
	}()
	defer func() { close(stop); <-wrote }()
	time.Sleep(300 * time.Millisecond) // A's echoes back up meanwhile
	b, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer b.Close()
	for seq := uint64(0); seq < 3; seq++ {
		if err := b.Send(wire.KindPing, 22, seq, nil); err != nil {
			return err
		}
		if _, _, err := b.Recv(time.Second); err != nil {
			return fmt.Errorf("blocking write: client B's PING %d unanswered in 1 s while A, which keeps sending, does not read: %w", seq, err)
		}
	}
	if st := r.Stats().Counters; st.BytesIn <= st.BytesOut {
		return fmt.Errorf("%w: blocking write: nothing of A's was left to write (in %d, out %d)", errNotShown, st.BytesIn, st.BytesOut)
	}
	return nil
}

// The flush-spin-at-eof mutant must still stop when asked while it spins
// for a half-closed peer that neither reads nor goes away, so a test can
// always end it: Stop returns (the spin checks for a requested stop).
func TestFlushSpinAtEOFStops(t *testing.T) {
	t.Parallel() // reactors of its own; a neighbour cannot answer the PING its spinning mutant holds
	for _, d := range []reactors.DesignName{reactors.LT, reactors.PrioThread} {
		t.Run(string(d), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Faults.FlushSpinAtEOF = true
			r := reactortest.Start(t, d, cfg)
			a, err := dialSmallReceiveBuffer(r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close() // if Stop hangs, this reset ends the spin and so the Stop
			if _, err := queueEchoes(r, a); err != nil {
				t.Fatal(err)
			}
			if err := a.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			b, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Send(wire.KindPing, 13, 0, nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.Recv(500 * time.Millisecond); !reactortest.IsTimeout(err) {
				t.Fatalf("the mutant is not spinning (a PING on another connection got %v): the test proves nothing", err)
			}
			stopped := make(chan error, 1)
			go func() {
				_, err := r.Stop()
				stopped <- err
			}()
			select {
			case err := <-stopped:
				if err != nil {
					t.Fatalf("stop: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Stop did not return within 5 s while the mutant spun for a peer that does not read")
			}
		})
	}
}
