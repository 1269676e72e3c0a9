//go:build linux

package reactors_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// The fault-hook detectors of the completion path (faulthooks_linux_test.go
// has the rows): the provided buffer ring running dry (P1), completions
// overflowing the completion queue (P2), and a descriptor number reused
// while an operation of the old connection is in flight (P3).

// fourBuffers gives the ring 4 provided buffers of 4 KiB: a burst on a few
// dozen connections finds them all taken.
func fourBuffers(c *reactors.Config) { c.Ring.Buffers, c.Ring.BufferSize = 4, 4096 }

// sixteenEntryCQ gives the ring the 16-entry queues the
// uring-overflow-ignored mutant has, so a burst on a few dozen connections
// overflows the correct loop's completion queue too.
func sixteenEntryCQ(c *reactors.Config) { c.Ring.Entries, c.Ring.CQ = 16, 16 }

// burstOnConns opens conns connections, has each write frames DATA frames
// of size bytes at once, all together, and reads every echo back: each
// must come, in order and intact, within 3 s of the one before. It returns
// the first connection's failure.
func burstOnConns(r *reactors.Reactor, conns, frames, size int) error {
	clients := make([]*reactortest.Client, conns)
	for i := range clients {
		c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		clients[i] = c
	}
	var wg sync.WaitGroup
	errs := make([]error, conns)
	start := make(chan struct{})
	for i, c := range clients {
		token := uint64(i + 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			go c.Conn.Write(dataFrames(token, 0, frames, size)) // the reader below must run concurrently
			errs[i] = expectEchoes(c, token, frames, size, 3*time.Second, fmt.Sprintf("connection %d of %d", i+1, conns))
		}()
	}
	close(start)
	wg.Wait()
	return errors.Join(errs...)
}

// detectBufferRingExhausted (uring-enobufs-eof): 48 connections each write
// 64 frames of 1 KiB at once against 4 provided buffers, so receives end
// with ENOBUFS; every connection must still get every echo (a receive
// taken for ended at ENOBUFS shuts its connection down mid-stream), and the
// correct loop must have armed a receive again after ENOBUFS (else the
// burst proved nothing).
func detectBufferRingExhausted(r *reactors.Reactor) error {
	if err := burstOnConns(r, 48, 64, 1024); err != nil {
		return err
	}
	reactortest.Settled(r, 20*time.Millisecond, 2*time.Second)
	if c := r.Stats().Counters; c.EnobufsRearms == 0 {
		return fmt.Errorf("no receive ended with ENOBUFS (counters %+v): the burst did not exhaust the buffer ring", c)
	}
	return nil
}

// detectOverflowLost (uring-overflow-ignored): 48 connections each write
// 32 frames of 512 bytes at once, so one enter posts more completions than
// a 16-entry completion queue holds; every frame must be answered, and the
// correct loop must have flushed an overflow (else the burst proved
// nothing).
func detectOverflowLost(r *reactors.Reactor) error {
	if err := burstOnConns(r, 48, 32, 512); err != nil {
		return err
	}
	reactortest.Settled(r, 20*time.Millisecond, 2*time.Second)
	if c := r.Stats().Counters; c.CQOverflowFlushes == 0 {
		return fmt.Errorf("the completion queue never overflowed (counters %+v): the burst proved nothing", c)
	}
	return nil
}

// detectReusedDescriptor (uring-close-no-cancel): the reactor closes
// connection A (an over-size header: REJECT and close) while A's receive is
// armed; connection B is accepted right after, its client's socket made
// beforehand, so the lowest free descriptor number the reactor's accept
// gets is the one A had. A's client then writes a frame: B must never
// receive it.
func detectReusedDescriptor(r *reactors.Reactor) error {
	a, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Send(wire.KindData, 0xA, 0, []byte("armed")); err != nil {
		return err
	}
	if _, _, err := a.Recv(2 * time.Second); err != nil {
		return fmt.Errorf("connection A's first echo: %w", err)
	}
	b, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(b)
	closedBefore := r.Stats().Counters.ConnsClosed
	hdr := make([]byte, wire.HeaderSize)
	wire.PutHeader(hdr, wire.Header{Length: 64<<20 + 28, Kind: wire.KindData, Token: 0xA, Seq: 1})
	if _, err := a.Conn.Write(hdr); err != nil {
		return err
	}
	if h, _, err := a.Recv(2 * time.Second); err != nil || h.Kind != wire.KindReject {
		return fmt.Errorf("connection A: got %v, %v; want REJECT", h.Kind, err)
	}
	if !reactortest.WaitFor(2*time.Second, func() bool { return r.Stats().Counters.ConnsClosed > closedBefore }) {
		return errors.New("connection A was not closed after its REJECT")
	}
	addr := r.Addr()
	if err := unix.Connect(b, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}); err != nil {
		return fmt.Errorf("connection B: %w", err)
	}
	// B accepted and its receive armed first; then A's client writes. The
	// write may fail (the reactor's socket is gone, an RST came back): that
	// is the correct outcome.
	time.Sleep(100 * time.Millisecond)
	_ = a.Send(wire.KindData, 0xA, 2, []byte("the old connection's bytes"))
	tv := unix.NsecToTimeval(int64(500 * time.Millisecond))
	if err := unix.SetsockoptTimeval(b, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(b, buf)
	switch {
	case n > 0 && bytes.Contains(buf[:n], []byte("old connection's")):
		return fmt.Errorf("connection B, on a reused descriptor, received %d bytes that connection A's client sent after A was closed", n)
	case n > 0:
		return fmt.Errorf("connection B received %d bytes it never asked for", n)
	case err != nil && !errors.Is(err, unix.EAGAIN):
		return fmt.Errorf("connection B: %w", err)
	}
	return nil
}
