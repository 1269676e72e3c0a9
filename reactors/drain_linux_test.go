//go:build linux

package reactors_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// TestDrainAnswersWhatItReadThenFIN: a client pipelines frames without
// pause while the reactor drains (Reactor.Drain, serve's SIGTERM): what
// comes back is an exact prefix of what was sent, of whole frames, ending
// in EOF (FIN), not a reset; no DATA frame is answered with REJECT; and a
// new connection is refused. Every design with its own epoll set per loop
// (oneshot's shared set is not swept: its stop stays STOP's).
func TestDrainAnswersWhatItReadThenFIN(t *testing.T) {
	t.Parallel() // reactors and connections of its own; what it judges is bytes, not timings
	for _, d := range designs.Names() {
		if d == reactors.OneShot {
			continue
		}
		t.Run(string(d), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Callback = "20us"
			r := reactortest.Start(t, d, cfg)
			c, err := net.Dial("tcp", r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sent := make(chan []byte, 1)
			go func() { sent <- pipeline(c) }()
			// Drain mid-stream: once the reactor has echoed frames, with
			// more on the way.
			if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.FramesEchoed > 100 }) {
				t.Fatalf("no echoes before the drain: %+v", r.Stats().Counters)
			}
			drained := make(chan error, 1)
			go func() { _, err := r.Drain(); drained <- err }()
			got, rerr := io.ReadAll(c)
			if errors.Is(rerr, syscall.ECONNRESET) {
				t.Fatalf("the connection was reset after %d bytes: want FIN", len(got))
			}
			if rerr != nil {
				t.Fatalf("read after %d bytes: %v", len(got), rerr)
			}
			c.(*net.TCPConn).CloseWrite()
			all := <-sent
			if len(got) == 0 || !bytes.Equal(got, all[:len(got)]) {
				t.Fatalf("%d bytes came back, not a prefix of the %d sent", len(got), len(all))
			}
			if n := len(got) % len(frame(0)); n != 0 {
				t.Fatalf("%d bytes came back: not whole frames", len(got))
			}
			if err := <-drained; err != nil {
				t.Fatal(err)
			}
			if c2, err := net.DialTimeout("tcp", r.Addr().String(), time.Second); err == nil {
				c2.Close()
				t.Fatal("a new connection was accepted after the drain began")
			}
			if _, err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			if st := r.Stats(); st.Counters.RejectsSent != 0 {
				t.Errorf("%d REJECTs sent during a drain: it must answer with echoes only", st.Counters.RejectsSent)
			}
		})
	}
}

// frame is DATA frame seq of the pipeline.
func frame(seq uint64) []byte {
	return wire.AppendFrame(nil, wire.KindData, 0, 1, seq, 0, make([]byte, 200))
}

// pipeline writes frames to c until a write fails (the server shut its
// side and the client's FIN or the reset ends it) or 3 s pass, and
// returns every byte it wrote.
func pipeline(c net.Conn) []byte {
	var all []byte
	end := time.Now().Add(3 * time.Second)
	for seq := uint64(0); time.Now().Before(end); seq++ {
		f := frame(seq)
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		n, err := c.Write(f)
		all = append(all, f[:n]...)
		if err != nil && !reactortest.IsTimeout(err) {
			break
		}
	}
	return all
}

// A drained connection whose client, after the server's FIN, sends far
// more than one turn of discarding reads and then its own FIN is closed at
// that EOF, on every design: the reactor ends then, not when the stop
// grace runs out. An edge-triggered loop gets no new edge for input its
// discarding left unread; without reading it again it waits out the grace
// (and closes with input unread, an RST).
func TestDrainReadsToTheClientsEOF(t *testing.T) {
	t.Parallel()                   // reactors and connections of its own
	const grace = 30 * time.Second // a stall waits this out; a drain ends in milliseconds
	for _, d := range designs.Names() {
		if d == reactors.OneShot {
			continue // its rearm reports what is left: TestDrainAnswersWhatItReadThenFIN
		}
		t.Run(string(d), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.StopGrace = grace
			r := reactortest.Start(t, d, cfg)
			c, err := net.Dial("tcp", r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(frame(0)); err != nil {
				t.Fatal(err)
			}
			if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.FramesEchoed == 1 }) {
				t.Fatalf("no echo before the drain: %+v", r.Stats().Counters)
			}
			drained := make(chan struct{})
			go func() { r.Drain(); r.Wait(); close(drained) }()
			if got, err := io.ReadAll(c); err != nil || len(got) != len(frame(0)) {
				t.Fatalf("before the server's FIN: %d bytes, %v; want its echo", len(got), err)
			}
			// The client sends 8 MiB more, in one write, then its FIN: the
			// server reads it only to drop it, at most a turn at a time.
			if _, err := c.Write(make([]byte, 8<<20)); err != nil {
				t.Fatalf("writing after the server's FIN: %v", err)
			}
			c.(*net.TCPConn).CloseWrite()
			select {
			case <-drained:
			case <-time.After(grace / 3):
				t.Fatalf("the reactor had not ended %v after its client's EOF: its drain waits for the %v grace", grace/3, grace)
			}
		})
	}
}
