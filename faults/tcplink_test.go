package faults_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/faults"
)

// connResult is how one server-side connection ended: its accept index and the
// error of its last read (nil for EOF).
type connResult struct {
	index int
	err   error
}

// startEcho starts a byte-echo server on loopback that closes a connection
// after EOF. Every connection's end is sent on the returned channel. The
// listener, the connections and the goroutines are stopped by the test's end.
func startEcho(t *testing.T) (net.Listener, <-chan connResult) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan connResult, 64)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			if closed {
				c.Close()
			}
			mu.Unlock()
			wg.Go(func() {
				results <- connResult{i, echo(c)}
				c.Close()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln, results
}

func echo(c net.Conn) error {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func dial(t *testing.T, addr string) *faults.TCPLink {
	t.Helper()
	link, err := faults.DialTCP(addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	return link
}

// roundTrip writes p and reads it back.
func roundTrip(t *testing.T, link *faults.TCPLink, p []byte) {
	t.Helper()
	if _, err := link.Write(p); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(p))
	if _, err := io.ReadFull(link, got); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("read back %q, %v; want %q", got, err, p)
	}
}

func TestTCPLinkPauseReading(t *testing.T) {
	ln, _ := startEcho(t)
	link := dial(t, ln.Addr().String())
	const pause, slack = 150 * time.Millisecond, 10 * time.Millisecond
	msg := frames(1)[0]

	// A Read that starts during a pause, and one that may already be blocked in
	// the connection when the pause begins: both return no earlier than its end.
	for _, readFirst := range []bool{false, true} {
		read := make(chan error, 1)
		got := make([]byte, len(msg))
		if readFirst {
			go func() { _, err := io.ReadFull(link, got); read <- err }()
		}
		start := time.Now()
		link.PauseReading(pause)
		if _, err := link.Write(msg); err != nil {
			t.Fatal(err)
		}
		if !readFirst {
			go func() { _, err := io.ReadFull(link, got); read <- err }()
		}
		if err := <-read; err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("read %q, %v", got, err)
		}
		if elapsed := time.Since(start); elapsed < pause-slack {
			t.Errorf("read first=%v: data returned after %v, during a pause of %v", readFirst, elapsed, pause)
		}
	}
}

func TestTCPLinkReconnectAndReset(t *testing.T) {
	ln, results := startEcho(t)
	link := dial(t, ln.Addr().String())
	roundTrip(t, link, []byte("first"))
	old := link.Conn()
	if err := link.Reconnect(); err != nil {
		t.Fatal(err)
	}
	if link.Generation() != 1 || link.Conn() == old {
		t.Fatalf("after Reconnect: generation %d, same conn %v", link.Generation(), link.Conn() == old)
	}
	roundTrip(t, link, []byte("second")) // the server is now reading connection 1
	if err := link.Reset(); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for want := map[int]error{0: nil, 1: syscall.ECONNRESET}; len(want) > 0; {
		select {
		case r := <-results:
			if w, ok := want[r.index]; !ok || !errors.Is(r.err, w) {
				t.Errorf("server connection %d ended with %v, want %v", r.index, r.err, w)
			}
			delete(want, r.index)
		case <-timeout:
			t.Fatalf("server connections %v never ended", want)
		}
	}
	if err := link.Close(); err != nil {
		t.Errorf("Close after Reset: %v", err)
	}
	if _, err := link.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if err := link.Reset(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Reset after Close: %v", err)
	}
	ln.Close()
	if err := link.Reconnect(); err == nil || link.Generation() != 1 {
		t.Errorf("Reconnect to a closed listener: %v, generation %d", err, link.Generation())
	}
}

func TestTCPLinkPlayHalfClose(t *testing.T) {
	ln, _ := startEcho(t)
	link := dial(t, ln.Addr().String())
	fs := frames(3)
	plan := faults.HalfClose{}.Apply(faults.HalfPackets{Every: 5}.Apply(faults.Writes(fs...)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := faults.Play(ctx, link, plan); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(link) // the echo, then EOF once the server closes
	if err != nil || !bytes.Equal(got, bytes.Join(fs, nil)) {
		t.Fatalf("read %d bytes, %v; want the %d bytes written", len(got), err, len(bytes.Join(fs, nil)))
	}
}
