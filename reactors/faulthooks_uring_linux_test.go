//go:build linux

package reactors_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
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
// must come, in order and intact, within 1.5 s of the one before (a
// correct loop answers the whole burst in tens of milliseconds). Then each
// connection writes one frame more, which must be answered too: a
// completion lost at the burst's end (the last send's, a receive's that
// ended) leaves nothing missing from the burst, but a connection that
// never answers again. It returns every connection's failure, joined.
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
			what := fmt.Sprintf("connection %d of %d", i+1, conns)
			if errs[i] = expectEchoes(c, token, frames, size, 1500*time.Millisecond, what); errs[i] != nil {
				return
			}
			if _, err := c.Conn.Write(dataFrames(token, frames, 1, size)); err != nil {
				errs[i] = fmt.Errorf("%s: after the burst was answered, writing one frame more: %w", what, err)
				return
			}
			errs[i] = expectEchoesFrom(c, token, frames, 1, size, 1500*time.Millisecond, what+", the frame after the burst")
		}()
	}
	close(start)
	wg.Wait()
	return errors.Join(errs...)
}

// detectBufferRingExhausted (uring-enobufs-eof): 48 connections each write
// 64 frames of 1 KiB at once against 4 provided buffers, so receives end
// with ENOBUFS; every connection must still get every echo (a receive
// taken for ended at ENOBUFS shuts its connection down mid-stream). The
// burst proves something only once a receive has ended with ENOBUFS
// (Counters.RecvEnobufs, counted before the loop, or the mutant, acts on
// it): bursts repeat until one has, at most burstAttempts times.
func detectBufferRingExhausted(r *reactors.Reactor) error {
	return burstUntil(r, 48, 64, 1024, "no receive ended with ENOBUFS: the bursts did not exhaust the buffer ring",
		func(c reactors.Counters) bool { return c.RecvEnobufs > 0 })
}

// detectOverflowLost (uring-overflow-ignored): 48 connections each write
// 32 frames of 512 bytes at once, so one enter posts more completions than
// a 16-entry completion queue holds; every frame must be answered. The
// burst proves something only once the queue has overflowed and been
// flushed (Counters.CQOverflowFlushes): bursts repeat until it has, at
// most burstAttempts times.
func detectOverflowLost(r *reactors.Reactor) error {
	return burstUntil(r, 48, 32, 512, "the completion queue never overflowed",
		func(c reactors.Counters) bool { return c.CQOverflowFlushes > 0 })
}

// burstAttempts bounds the bursts burstUntil makes: one nearly always
// shows the condition (it missed once in about 200 with both cores busy).
const burstAttempts = 5

// burstUntil makes bursts (burstOnConns) until shown holds of the
// reactor's counters once the loop has settled, at most burstAttempts: it
// returns the first burst's failure, nil once shown holds, and an error
// wrapping errNotShown that says notShown when it never did.
func burstUntil(r *reactors.Reactor, conns, frames, size int, notShown string, shown func(reactors.Counters) bool) error {
	var c reactors.Counters
	for range burstAttempts {
		if err := burstOnConns(r, conns, frames, size); err != nil {
			return err
		}
		reactortest.Settled(r, 20*time.Millisecond, 2*time.Second)
		if c = r.Stats().Counters; shown(c) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s in %d bursts (counters %+v)", errNotShown, notShown, burstAttempts, c)
}

// detectReusedDescriptor (uring-close-no-cancel): the reactor closes
// connection A (an over-size header: REJECT and close) while A's receive is
// armed; connection B is accepted right after, its client's socket made
// beforehand, so the lowest free descriptor number the reactor's accept
// gets is the one A had. A's client then writes a frame: B must never
// receive it. The attempt judges only once B is seen accepted on A's
// number (this process's descriptor table: the socket whose peer is
// each client): one where B got another number is made again, at most
// burstAttempts times.
func detectReusedDescriptor(r *reactors.Reactor) error {
	for range burstAttempts {
		if shown, err := reusedDescriptorAttempt(r); shown || err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: connection B never got the descriptor number connection A had, in %d attempts", errNotShown, burstAttempts)
}

// reusedDescriptorAttempt is one attempt of detectReusedDescriptor: shown
// says whether B got A's descriptor number (only then is err a verdict).
func reusedDescriptorAttempt(r *reactors.Reactor) (shown bool, err error) {
	a, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return false, err
	}
	defer a.Close()
	if err := a.Send(wire.KindData, 0xA, 0, []byte("armed")); err != nil {
		return false, err
	}
	if _, _, err := a.Recv(2 * time.Second); err != nil {
		return false, fmt.Errorf("connection A's first echo: %w", err)
	}
	aFd, err := descriptorWithPeer(a.Conn.LocalAddr().(*net.TCPAddr).AddrPort())
	if err != nil {
		return false, fmt.Errorf("connection A: %w", err)
	}
	aFile := fmt.Sprintf("/proc/self/fd/%d", aFd)
	aSocket, err := os.Readlink(aFile) // socket:[inode]
	if err != nil {
		return false, fmt.Errorf("connection A's descriptor %d: %w", aFd, err)
	}
	b, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(b)
	before := r.Stats().Counters
	hdr := make([]byte, wire.HeaderSize)
	wire.PutHeader(hdr, wire.Header{Length: 64<<20 + 28, Kind: wire.KindData, Token: 0xA, Seq: 1})
	if _, err := a.Conn.Write(hdr); err != nil {
		return false, err
	}
	if h, _, err := a.Recv(2 * time.Second); err != nil || h.Kind != wire.KindReject {
		return false, fmt.Errorf("connection A: got %v, %v; want REJECT", h.Kind, err)
	}
	// B is connected once the reactor has let go of A's number: the
	// descriptor no longer names A's socket (a closed socket's peer is
	// not read: after a shutdown it has none).
	if !reactortest.WaitFor(2*time.Second, func() bool {
		l, err := os.Readlink(aFile)
		return r.Stats().Counters.ConnsClosed > before.ConnsClosed && (err != nil || l != aSocket)
	}) {
		return false, fmt.Errorf("connection A was not closed after its REJECT (descriptor %d, %s)", aFd, aSocket)
	}
	addr := r.Addr()
	if err := unix.Connect(b, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}); err != nil {
		return false, fmt.Errorf("connection B: %w", err)
	}
	// Whether B was accepted on A's number is read off that number alone:
	// getpeername opens no descriptor, where listing /proc/self/fd does
	// (one that could take the number first).
	bName, err := unix.Getsockname(b)
	if err != nil {
		return false, err
	}
	bAddr := bName.(*unix.SockaddrInet4)
	if !reactortest.WaitFor(2*time.Second, func() bool {
		p, err := unix.Getpeername(aFd)
		p4, ok := p.(*unix.SockaddrInet4)
		return err == nil && ok && p4.Port == bAddr.Port && p4.Addr == bAddr.Addr
	}) {
		return false, nil // B got another number, or none: nothing to judge
	}
	// B accepted on A's number; now A's client writes. The write may fail
	// (the reactor's socket is gone, an RST came back): that is the
	// correct outcome.
	_ = a.Send(wire.KindData, 0xA, 2, []byte("the old connection's bytes"))
	tv := unix.NsecToTimeval(int64(500 * time.Millisecond))
	if err := unix.SetsockoptTimeval(b, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return true, err
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(b, buf)
	switch {
	case n > 0 && bytes.Contains(buf[:n], []byte("old connection's")):
		return true, fmt.Errorf("connection B, on A's descriptor number %d, received %d bytes that connection A's client sent after A was closed", aFd, n)
	case n > 0:
		return true, fmt.Errorf("connection B received %d bytes it never asked for: %q", n, buf[:n])
	case err != nil && !errors.Is(err, unix.EAGAIN):
		return true, fmt.Errorf("connection B: %w", err)
	}
	return true, nil
}

// descriptorWithPeer is the descriptor of this process (the in-process
// reactor's) whose socket's peer is peer: the reactor's end of the
// connection a client made from peer.
func descriptorWithPeer(peer netip.AddrPort) (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1, err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sa, err := unix.Getpeername(fd)
		if err != nil {
			continue // not a connected socket, or closed meanwhile
		}
		if p, ok := sa.(*unix.SockaddrInet4); ok && p.Port == int(peer.Port()) && netip.AddrFrom4(p.Addr) == peer.Addr().Unmap() {
			return fd, nil
		}
	}
	return -1, fmt.Errorf("no descriptor of this process is connected to %v", peer)
}
