package cases

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/wire"
)

// w1Case is W1: a client that writes without reading is stopped by
// backpressure with the server's memory bounded, and then gets every echo.
func w1Case() conformance.Case {
	def := &conformance.Reference{Config: reactors.DefaultConfig()}
	_, held := w1HeldLimit(def.Config)
	_, reference := w1GrowthLimit(def)
	_, blackBox := w1GrowthLimit(nil)
	return conformance.Case{
		ID:         "W1",
		Title:      "slow consumer: memory bounded, nothing lost",
		Claim:      "a client that writes without reading is stopped by backpressure (the server stops reading it) with server memory bounded; once it reads again every echo arrives intact and in order",
		WireFaults: []string{"slow-consumer"},
		Bound: fmt.Sprintf("in-process, the bytes the reactor holds (read − written) ≤ %s; a process's RSS growth once the client blocked, beyond what it grew by for the kernel's buffer maxima + 8 MiB (at most %d MiB) echoed to a client that reads, ≤ %s (a black box: %s); what it holds once it has stopped reading is shown, not judged (a proxy's own kernel queues count there); the client gives up after writing %d MiB unblocked, in frames of %d B",
			held, w1WarmUpMax>>20, reference, blackBox, w1GiveUp>>20, w1FrameSize),
		Run: runW1,
	}
}

// W1's client writes DATA frames of w1FrameSize payload bytes until its
// writes block, and gives up after w1GiveUp bytes unblocked.
const (
	w1FrameSize = 4096
	w1GiveUp    = 128 << 20
)

// w1HeldLimit is the most an in-process reference reactor may hold
// (bytes read less bytes written) for a client that does not read: its
// out-queue's high watermark, one turn's byte budget read past it, and two
// frames in pieces.
func w1HeldLimit(cfg reactors.Config) (limit int64, arithmetic string) {
	frame := w1FrameSize + wire.HeaderSize
	limit = int64(cfg.OutHigh + cfg.Budgets.Bytes + 2*frame)
	return limit, fmt.Sprintf("high watermark %d + byte budget %d + 2 × %d B frames = %d bytes", cfg.OutHigh, cfg.Budgets.Bytes, frame, limit)
}

// w1CompletionHeldLimit is w1HeldLimit for a completion design
// (designs.Completion): what its ring receives after the out-queue passed
// the high watermark, before the receive's cancel lands, is bounded by the
// provided buffer ring, not by a turn's byte budget (the loop stops arming
// the receive at that budget of unparsed bytes, and the kernel may fill
// every free buffer in the enter that follows).
func w1CompletionHeldLimit(cfg reactors.Config) (limit int64, arithmetic string) {
	frame := w1FrameSize + wire.HeaderSize
	ring := cfg.Ring.Buffers * cfg.Ring.BufferSize
	limit = int64(cfg.OutHigh + cfg.Budgets.Bytes + ring + 2*frame)
	return limit, fmt.Sprintf("high watermark %d + byte budget %d + buffer ring %d × %d B + 2 × %d B frames = %d bytes",
		cfg.OutHigh, cfg.Budgets.Bytes, cfg.Ring.Buffers, cfg.Ring.BufferSize, frame, limit)
}

// w1GrowthLimit is the most a process's memory may grow for a client
// that does not read, beyond what the same bytes echoed to a reading
// client cost it: for a reference reactor (ref) four times its high
// watermark and byte budget plus 16 MiB; for a black box (ref nil)
// 32 MiB.
func w1GrowthLimit(ref *conformance.Reference) (limit int64, arithmetic string) {
	if ref == nil {
		limit = 32 << 20
		return limit, fmt.Sprintf("%d MiB", limit>>20)
	}
	cfg := ref.Config
	limit = int64(4*(cfg.OutHigh+cfg.Budgets.Bytes)) + 16<<20
	return limit, fmt.Sprintf("4 × (high watermark %d KiB + byte budget %d KiB) + 16 MiB = %d KiB", cfg.OutHigh>>10, cfg.Budgets.Bytes>>10, limit>>10)
}

func runW1(c *conformance.C) {
	inst := c.Instance()
	const size = w1FrameSize
	const giveUp = w1GiveUp
	u0 := usage(c)
	// What the server's memory does for bytes echoed to a client that
	// reads, first: a runtime's one-time growth (a pooled allocator's
	// arenas, a heap sized by the first traffic) is then paid before the
	// slow consumer comes, and its growth is its own.
	var refSent int64
	var noBaseline error // the warm-up failed: memory is not judged, the rest is
	u1 := u0
	if u0.RSS >= 0 { // what is judged by memory: a process of its own
		limit, lwhy := fillLimit(c)
		c.Logf("%s", lwhy)
		if refSent, noBaseline = echoThrough(c.Context(), inst.Addr(), min(limit, w1WarmUpMax)); noBaseline != nil {
			c.Evidencef("what the server's memory does for a client that reads could not be measured: %v", noBaseline)
		}
		u1 = usage(c)
	}
	link := dialQuiet(c, "slow consumer", inst.Addr())
	socks, qerr := pinQueues(link.Conn())
	sent := writeUntilBlocked(c, link.Conn(), size, giveUp)
	u2 := usage(c)
	c.Logf("client blocked after %d frames (%d MiB)", sent, sent*size>>20)
	// The server stopped reading: its receive queue holds bytes and does
	// not move. What it sent back nobody read, so what it holds is what
	// was sent less what the four kernel queues hold (a candidate, which
	// the reading of every echo below confirms).
	held := int64(-1)
	if qerr == nil {
		q0, err0 := socks.sample(false)
		time.Sleep(100 * time.Millisecond) // a second look: a queue that stands still
		q1, err1 := socks.sample(false)
		if err0 == nil && err1 == nil {
			c.Evidencef("the server's receive queue: %d then %d bytes 100 ms later (%v)", q0.serverUnread, q1.serverUnread, q1)
			if q1.serverOpen() && q1.serverUnread > 0 && q1.serverUnread == q0.serverUnread {
				held = max(0, int64(sent)*(size+wire.HeaderSize)-q1.kernel())
			}
		}
	}
	ref := inst.Reference()
	switch {
	case u2.RSS < 0 && ref != nil:
		st, err := inst.Stats()
		if err != nil {
			c.Fatalf("stats: %v", err)
		}
		held := int64(st.Counters.BytesIn) - int64(st.Counters.BytesOut)
		bound, arithmetic := w1HeldLimit(ref.Config)
		if designs.Completion(ref.Design) {
			bound, arithmetic = w1CompletionHeldLimit(ref.Config)
		}
		c.Evidencef("reactor holds %d bytes (read − written), bound %s; backpressure pauses %d", held, arithmetic, st.Counters.BackpressureOn)
		if held > bound {
			c.Fatalf("server holds %d bytes for a client that does not read, more than %s", held, arithmetic)
		}
	case u2.RSS >= 0:
		bound, arithmetic := w1GrowthLimit(ref)
		grew := u2.RSS - u1.RSS
		c.Evidencef("server RSS %d KiB; after %d MiB echoed to a client that reads %d KiB (grew %d KiB: its own, not the slow consumer's); with the slow consumer blocked %d KiB (grew %d KiB, bound %s)",
			u0.RSS>>10, refSent>>20, u1.RSS>>10, (u1.RSS-u0.RSS)>>10, u2.RSS>>10, grew>>10, arithmetic)
		if held >= 0 {
			// Evidence, not judged: what a server hands to kernel queues
			// of its own (a proxy's hop to its backend) counts here too,
			// and those are bounded by the kernel, not by the server.
			c.Evidencef("the server stopped reading the slow consumer; sent less this connection's kernel queues: %d KiB (its own buffers, and any kernel queues of its own beyond them)", held>>10)
		}
		if grew > bound && noBaseline == nil {
			c.Fatalf("server memory grew by %d KiB for a client that does not read, beyond what the same bytes echoed to a reading client cost it, more than %s", grew>>10, arithmetic)
		}
	default:
		c.Skipf("no way to observe this target's memory")
	}
	// Resume: every echo, in order.
	readEveryEcho(c, link.Conn(), sent, size)
	if noBaseline != nil && u2.RSS >= 0 {
		c.Inconclusivef("the server stopped reading the slow consumer and every echo came back, but its memory was not judged: what it does for a client that reads could not be measured (%v), so the slow consumer's share cannot be told", noBaseline)
	}
}

// writeUntilBlocked writes DATA frames of size bytes (token 1, seq from
// 0) to conn, reading nothing, until a write blocks for 300 ms: the
// kernel's buffers are full because the server stopped reading. It
// returns how many frames were written whole; past giveUp bytes it fails
// the case: the server never stopped reading.
func writeUntilBlocked(c *conformance.C, conn net.Conn, size, giveUp uint64) uint64 {
	var sent uint64
	frame := make([]byte, 0, size+wire.HeaderSize)
	for {
		payload := make([]byte, size)
		fill(payload, 1, sent)
		frame = wire.AppendFrame(frame[:0], wire.KindData, 0, 1, sent, 0, payload)
		conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := conn.Write(frame); err != nil {
			if isTimeout(err) {
				break // the kernel buffers are full: the server stopped reading
			}
			c.Fatalf("write frame %d: %v", sent, err)
		}
		sent++
		if sent*size > giveUp {
			c.Evidencef("sent %d frames of %d B without reading any echo", sent, size)
			c.Fatalf("wrote %d MiB without blocking: the server never stopped reading", sent*size>>20)
		}
	}
	conn.SetWriteDeadline(time.Time{})
	return sent
}

// readEveryEcho reads the echoes of the sent frames writeUntilBlocked
// wrote, each within echoBound, and fails the case on the first that is
// missing, out of order or altered.
func readEveryEcho(c *conformance.C, conn net.Conn, sent, size uint64) {
	for seq := uint64(0); seq < sent; seq++ {
		conn.SetReadDeadline(time.Now().Add(echoBound))
		g, err := readFrame(conn)
		if err != nil {
			c.Fatalf("after resuming: echo %d of %d: %v", seq, sent, err)
		}
		if why := checkEcho(g, 1, seq, int(size)); why != "" {
			c.Fatalf("after resuming: echo %d: %s", seq, why)
		}
	}
}

// echoThrough sends about n bytes of DATA frames to addr on a connection
// of its own while reading every echo back (a reader and a writer, 64 KiB
// of whole frames at a time), and closes it; it returns what was sent.
// Each echo byte is compared with what was sent.
func echoThrough(ctx context.Context, addr string, n int64) (int64, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	deadline := time.Now().Add(w1WarmUpFor)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	conn.SetDeadline(deadline)
	var chunk []byte
	for seq := uint64(0); len(chunk) < 64<<10; seq++ {
		p := make([]byte, 4<<10-wire.HeaderSize)
		fill(p, 2, seq)
		chunk = wire.AppendFrame(chunk, wire.KindData, 0, 2, seq, 0, p)
	}
	n -= n % int64(len(chunk))
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var got int64
		for got < n {
			k, err := conn.Read(buf)
			for i := range buf[:k] {
				if buf[i] != chunk[(got+int64(i))%int64(len(chunk))] {
					done <- fmt.Errorf("byte %d of the echo differs from what was sent", got+int64(i))
					return
				}
			}
			got += int64(k)
			if err != nil {
				done <- fmt.Errorf("after %d of %d bytes echoed: %w", got, n, err)
				return
			}
		}
		done <- nil
	}()
	var sent int64
	for sent < n {
		k, err := conn.Write(chunk[:min(int64(len(chunk)), n-sent)])
		sent += int64(k)
		if err != nil {
			conn.Close() // the reader's error, if it has one, says more
			if rerr := <-done; rerr != nil {
				return sent, rerr
			}
			return sent, err
		}
	}
	return sent, <-done
}

// W1's warm-up (echoThrough) sends at most w1WarmUpMax bytes and takes at
// most w1WarmUpFor: on loopback 64 MiB take well under a second.
const (
	w1WarmUpMax = 64 << 20
	w1WarmUpFor = 10 * time.Second
)
