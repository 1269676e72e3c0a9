//go:build linux

package uring

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// user_data of the echo server: the kind in the top byte, the descriptor below.
const (
	kindAccept = 1 << 56
	kindRecv   = 2 << 56
	kindSend   = 3 << 56
	kindClose  = 4 << 56
	kindMask   = 0xff << 56
)

// echoConn is the server's state of one accepted connection.
type echoConn struct {
	fd       int
	out      []byte // received, not yet handed to a send
	inflight []byte // handed to the send in flight (pinned by the ring)
	eof      bool
	closing  bool
}

// listenLoopback opens a listening TCP socket on 127.0.0.1 and returns it with
// its address.
func listenLoopback(t *testing.T) (int, string) {
	t.Helper()
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(lfd) })
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 64); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	return lfd, net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
}

// A TCP echo over loopback done entirely with the layer: multishot accept,
// multishot recv into a provided buffer ring (small, so it runs dry and
// ENOBUFS is met and recovered from), sends of what was received. Every
// client's bytes come back whole and in order.
func TestEchoOverLoopback(t *testing.T) {
	r := newRing(t, Config{Entries: 32})
	lfd, addr := listenLoopback(t)
	br, err := r.NewBufRing(1, 8, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.AcceptMultishot(lfd, kindAccept|uint64(lfd)); err != nil {
		t.Fatal(err)
	}

	const clients, size = 4, 256 << 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			errs <- echoClient(addr, seed, size)
		}(uint64(i + 1))
	}
	clientsDone := make(chan struct{})
	go func() { wg.Wait(); close(clientsDone) }()

	conns := map[int]*echoConn{}
	accepted, closed := 0, 0
	var loopErr error
	send := func(c *echoConn) {
		if c.inflight != nil || len(c.out) == 0 {
			return
		}
		c.inflight, c.out = c.out, nil
		if _, err := r.Send(c.fd, c.inflight, kindSend|uint64(c.fd)); err != nil {
			loopErr = err
		}
	}
	maybeClose := func(c *echoConn) {
		if c.eof && !c.closing && c.inflight == nil && len(c.out) == 0 {
			c.closing = true
			if _, err := r.CloseFD(c.fd, kindClose|uint64(c.fd)); err != nil {
				loopErr = err
			}
		}
	}
	handle := func(cqe CQE) {
		fd := int(cqe.UserData &^ kindMask)
		switch cqe.UserData & kindMask {
		case kindAccept:
			if cqe.Res < 0 {
				loopErr = cqe.Err()
				return
			}
			accepted++
			c := &echoConn{fd: int(cqe.Res)}
			conns[c.fd] = c
			if _, err := r.RecvMultishot(c.fd, br, kindRecv|uint64(c.fd)); err != nil {
				loopErr = err
			}
			if !cqe.More() {
				_, loopErr = r.AcceptMultishot(lfd, kindAccept|uint64(lfd))
			}
		case kindRecv:
			c := conns[fd]
			if bid, ok := cqe.BufferID(); ok {
				c.out = append(c.out, br.Bytes(bid, int(max(cqe.Res, 0)))...)
				br.Recycle(bid)
			}
			switch {
			case cqe.Res == 0:
				c.eof = true
			case errors.Is(cqe.Err(), unix.ENOBUFS):
				// Backpressure, not end of stream: arm again, the bytes wait in the socket.
			case cqe.Res < 0:
				loopErr = cqe.Err()
				return
			}
			if !cqe.More() && !c.eof {
				if _, err := r.RecvMultishot(c.fd, br, kindRecv|uint64(c.fd)); err != nil {
					loopErr = err
				}
			}
			send(c)
			maybeClose(c)
		case kindSend:
			c := conns[fd]
			if cqe.Res <= 0 {
				loopErr = errors.Join(errors.New("send"), cqe.Err())
				return
			}
			rest := c.inflight[cqe.Res:]
			c.inflight = nil
			c.out = append(append([]byte(nil), rest...), c.out...)
			send(c)
			maybeClose(c)
		case kindClose:
			if cqe.Res != 0 {
				loopErr = errors.Join(errors.New("close"), cqe.Err())
			}
			delete(conns, fd)
			closed++
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for closed < clients && loopErr == nil && time.Now().Before(deadline) {
		if _, err := r.Wait(1, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reap(handle); err != nil {
			t.Fatal(err)
		}
	}
	if loopErr != nil {
		t.Fatalf("server loop: %v", loopErr)
	}
	if closed < clients {
		t.Fatalf("after 20s: %d accepted, %d closed, want %d", accepted, closed, clients)
	}
	<-clientsDone
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s := r.Stats()
	t.Logf("stats %+v, buffers recycled %d", s, br.Recycled())
	if r.Pinned() != 0 {
		t.Errorf("%d pins left with no send in flight", r.Pinned())
	}
}

// echoClient writes size random bytes while reading the echo, and checks it.
func echoClient(addr string, seed uint64, size int) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	want := make([]byte, size)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	werr := make(chan error, 1)
	go func() {
		for off := 0; off < size; {
			n := min(1+rng.IntN(8192), size-off)
			if _, err := c.Write(want[off : off+n]); err != nil {
				werr <- err
				return
			}
			off += n
		}
		werr <- nil
	}()
	got := make([]byte, size)
	if _, err := io.ReadFull(c, got); err != nil {
		return errors.Join(errors.New("client reading the echo"), err)
	}
	if err := <-werr; err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		return errors.New("echo differs from what was sent at byte " + strconv.Itoa(i))
	}
	return nil
}

// A multishot recv that finds its buffer ring empty completes with ENOBUFS and
// without CQEFMore: a result, not end of stream. After the buffers are
// recycled and the recv armed again, every byte arrives, in order.
func TestNoBuffersIsAResultAndRecovers(t *testing.T) {
	r := newRing(t, Config{Entries: 8})
	fds := socketPair(t)
	br, err := r.NewBufRing(2, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 100)
	for i := range want {
		want[i] = byte(i)
	}
	if _, err := unix.Write(fds[1], want); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RecvMultishot(fds[0], br, 1); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var held []uint16
	noBufs := 0
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		if _, err := r.Wait(1, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		_, err := r.Reap(func(c CQE) {
			if bid, ok := c.BufferID(); ok {
				got = append(got, br.Bytes(bid, int(c.Res))...)
				held = append(held, bid) // held: the ring runs dry
			}
			switch {
			case c.Res == 0:
				t.Fatalf("end of stream after %d of %d bytes", len(got), len(want))
			case errors.Is(c.Err(), unix.ENOBUFS):
				noBufs++
				if c.More() {
					t.Errorf("ENOBUFS completion with CQEFMore: %+v", c)
				}
				for _, bid := range held {
					br.Recycle(bid)
				}
				held = held[:0]
				if _, err := r.RecvMultishot(fds[0], br, 1); err != nil {
					t.Fatal(err)
				}
			case c.Res < 0:
				t.Fatalf("recv: %v", c.Err())
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("received %d bytes %v, want %v", len(got), got, want)
	}
	if noBufs == 0 || r.Stats().NoBuffers != uint64(noBufs) {
		t.Fatalf("ENOBUFS seen %d times, counted %d: want at least once (2 buffers of 16 for 100 bytes) and counted", noBufs, r.Stats().NoBuffers)
	}
	t.Logf("%d ENOBUFS results, %d buffers recycled", noBufs, br.Recycled())
}

// A CQ far smaller than the completions posted overflows; the kernel keeps the
// overflow (IORING_FEAT_NODROP), Reap flushes it, and every completion is read
// exactly once; the overflow is counted and nothing was dropped.
func TestCQOverflowLosesNoCompletion(t *testing.T) {
	r := newRing(t, Config{Entries: 4, CQEntries: 4})
	if r.Setup().Features&FeatNoDrop == 0 {
		t.Skip("kernel without IORING_FEAT_NODROP: it drops overflowing completions")
	}
	const total = 200
	for ud := uint64(1); ud <= total; ud++ { // SQE submits each time the SQ of 4 is full
		if _, err := r.Nop(ud); err != nil {
			t.Fatalf("nop %d: %v", ud, err)
		}
	}
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	seen := make(map[uint64]int, total)
	if _, err := r.Reap(func(c CQE) { seen[c.UserData]++ }); err != nil {
		t.Fatal(err)
	}
	for ud := uint64(1); ud <= total; ud++ {
		if seen[ud] != 1 {
			t.Errorf("nop %d reaped %d times, want once", ud, seen[ud])
		}
	}
	s := r.Stats()
	if s.OverflowFlushes == 0 || s.KernelDropped != 0 {
		t.Errorf("stats %+v: want overflow flushes counted and none dropped", s)
	}
	t.Logf("stats %+v", s)
}

// A received provided buffer is sent back as it is (memory the runtime does not
// manage, so nothing is pinned), and recycled after the send completes.
func TestSendStraightFromAProvidedBuffer(t *testing.T) {
	r := newRing(t, Config{Entries: 8})
	fds := socketPair(t)
	br, err := r.NewBufRing(4, 2, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fds[1], []byte("round trip")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Recv(fds[0], br, 1); err != nil {
		t.Fatal(err)
	}
	got := reapAll(t, r, 1, 5*time.Second)
	bid, ok := got[0].BufferID()
	if !ok || got[0].Res != 10 {
		t.Fatalf("recv completion %+v, want 10 bytes in a provided buffer", got[0])
	}
	if _, err := r.Send(fds[0], br.Bytes(bid, int(got[0].Res)), 2); err != nil {
		t.Fatal(err)
	}
	if r.Pinned() != 0 {
		t.Errorf("sending mapped memory pinned %d values", r.Pinned())
	}
	sent := reapAll(t, r, 1, 5*time.Second)
	if sent[0].UserData != 2 || sent[0].Res != 10 {
		t.Fatalf("send completion %+v, want 10 bytes", sent[0])
	}
	br.Recycle(bid)
	back := make([]byte, 16)
	n, err := unix.Read(fds[1], back)
	if err != nil || string(back[:n]) != "round trip" {
		t.Fatalf("read back %q, %v", back[:n], err)
	}
}
