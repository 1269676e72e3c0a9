package conformance

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

func writeCases() []Case {
	return []Case{{
		ID:      "W1",
		Title:   "slow consumer: memory bounded, nothing lost",
		Claim:   "a client that writes without reading is stopped by backpressure (the server stops reading it) with server memory bounded; once it reads again every echo arrives intact and in order",
		Mutants: []string{"unbounded-outq"}, WireFaults: []string{"slow-consumer"},
		Bound: "held bytes ≤ out-queue high watermark + one turn's byte budget + 2 frames (in-process); for a process, its RSS growth once the client blocked beyond what the same server grew by for the kernel's buffer maxima + 8 MiB echoed to a client that reads ≤ 4 × (high watermark + byte budget) + 16 MiB for a reference process, 32 MiB for a black box (what it holds once it has stopped reading is shown, not judged: a proxy's own kernel queues count there); the client gives up after writing 128 MiB unblocked",
		Run:   runW1,
	}, {
		ID:      "W2",
		Title:   "no busy loop while idle",
		Claim:   "with ten connected, idle clients the server does not spin (e.g. on EPOLLOUT with nothing to write)",
		Mutants: []string{"permanent-epollout"},
		Bound:   "server CPU ≤ 25% of a 500 ms idle window: an idle loop wakes at most once per 1 ms tick (~20 µs each here, ≤ 2%, plus Go runtime ≤ 8% measured); a spinning loop is ~100%. A reference reactor's loops also make ≤ 4 × window/tick + 100 epoll_waits each (idle: ~2 per tick), which a spinning loop exceeds even when a contended machine gives it 2% of a CPU",
		Run:     runW2,
	}, {
		ID:      "W3",
		Title:   "short writes of large echoes",
		Claim:   "32 echoes of 512 KiB (16 MiB, more than the socket buffers of both ends hold) to a client that pauses reading for 500 ms, and 512 small echoes of 1 to 3,999 bytes, half before and half after the large ones, sent in groups of 8 a millisecond apart, to a client with a 4 KiB receive buffer (so that the server's writes of small pieces come back short too), are delivered intact and in order, though the server's writes come back short",
		Mutants: []string{"drop-short-write"}, WireFaults: []string{"slow-consumer"},
		Bound:   "every echo within 20 s (16 MiB over loopback takes tens of milliseconds once the client reads)",
		Timeout: 40 * time.Second,
		Run:     runW3,
	}, {
		ID:      "W4",
		Title:   "a half-closed peer that does not read does not freeze the others",
		Claim:   "once the server has read the FIN of a client that leaves the echoes the server holds for it unread, four other connections doing a round trip every 10 ms are each served within the bound. Inconclusive unless the server was seen reading that FIN while holding echoes (its end open, in CLOSE_WAIT), holding them to the end, and delivering them afterwards (a server that writes everything before it reads again never holds any; one that drops them never held them)",
		Mutants: []string{"flush-spin-at-eof"}, WireFaults: []string{"half-close"},
		Timeout: 100 * time.Second, // 3 × (fill ≤ 15 s + FIN ≤ 10 s) + probes + the echoes owed ≤ 20 s
		Bound:   "light round trips ≤ max(500 ms, 20 × the wait the budgets allow: (consume budget + 5 sources) turns of at most 200 µs of syscalls each) over 1.5 s, at most 2% over it, none over twice it; one unanswered for twice the bound fails at once. The client fills as in I2 until the server stops reading or holds 256 KiB of echoes with nothing of it left unread (so a server that has not paused reads the FIN next, with echoes queued), then shuts down its write side, reads (4 KiB at a time, only while the server does not) until the server reads the FIN (within 10 s), and reads nothing more until the probes are done; then every echo owed within 20 s. A server that read the FIN holding nothing after it paused or held is tried again on a new connection (the one given up on closed), 3 connections at most: what a resumed server can write at once is the kernel's draw",
		Run:     runW4,
	}, {
		ID:           "W5",
		Title:        "a peer that stops reading does not freeze the others",
		Claim:        "while one client keeps sending and never reads (nor half-closes), so that the server's writes back to it back up, four other connections doing a round trip every 10 ms are each served within the bound. Inconclusive unless the stalled connection's path back was seen backed up with the server's end open (bytes in the server's send queue and in the client's receive queue) before the probes and after them",
		Mutants:      []string{"block-on-full-write"},
		BlackBoxBugs: []string{"block-loop-on-full"},
		Bound:        "light round trips ≤ max(500 ms, 20 × the wait the budgets allow: (consume budget + 5 sources) turns of at most 200 µs of syscalls each) over 1.5 s, at most 2% over it, none over twice it (W4's bound); one unanswered for twice the bound fails at once. The stalled client (4 KiB receive buffer) fills as in I2 until the server stops reading it or holds 256 KiB of echoes it cannot write, then goes on sending (writes of 64 KiB, each given 20 ms) while the others are probed",
		Run:          runW5,
	}}
}

// runW5 stalls one connection (it sends, and reads nothing) until the
// server's writes to it back up, then probes four others while it goes
// on sending.
func runW5(c *C) {
	bound, limit, peers := c.lightProbes()
	l := c.dialLoaded("stalled conn", 100)
	f := c.fill(l, limit, holdSome, false)
	c.Evidencef("the stalled client: %s", f.why)
	if !f.established() {
		c.Inconclusivef("the server neither stopped reading the client that does not read nor held echoes it could not write (%s): its writes never backed up into the server, so nothing could stall it", f.why)
	}
	if !l.q.outputBlocked() || !l.q.serverOpen() {
		c.Inconclusivef("the server's writes to the client that does not read were not seen backing up with its end open (%v): nothing was stalled", l.q)
	}
	// The stalled client goes on sending while the others are probed.
	stop, sent := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				sent <- nil
				return
			default:
			}
			if _, err := l.writeSome(64<<10, 20*time.Millisecond); err != nil {
				sent <- err
				return
			}
		}
	}()
	results := probeAll(c, peers, wire.KindData, 2*bound)
	close(stop)
	if err := <-sent; err != nil {
		c.Evidencef("the stalled client's writes ended: %v", err)
	}
	judgeProbes(c, peers, results, bound, "delayed while a client that keeps sending does not read")
	if c.Failed() {
		return
	}
	if err := l.sample(); err != nil {
		c.Inconclusivef("the others were served, but the stalled connection's queues could not be read afterwards: %v", err)
	}
	c.Evidencef("after the probes, the stalled connection: %v", l.q)
	if !l.q.outputBlocked() || !l.q.serverOpen() {
		c.Inconclusivef("the others were served, but by the end of the probes the server's writes to the stalled client were no longer backed up with its end open (%v): it was not stalled throughout", l.q)
	}
}

func runW1(c *C) {
	inst := c.Instance()
	const size = 4096
	const giveUp = 128 << 20
	u0 := c.usage()
	// What the server's memory does for bytes echoed to a client that
	// reads, first: a runtime's one-time growth (a pooled allocator's
	// arenas, a heap sized by the first traffic) is then paid before the
	// slow consumer comes, and its growth is its own.
	var refSent int64
	var noBaseline error // the warm-up failed: memory is not judged, the rest is
	u1 := u0
	if u0.RSS >= 0 { // what is judged by memory: a process of its own
		limit, lwhy := c.fillLimit()
		c.Logf("%s", lwhy)
		if refSent, noBaseline = echoThrough(c.Context(), inst.Addr(), min(limit, w1WarmUpMax)); noBaseline != nil {
			c.Evidencef("what the server's memory does for a client that reads could not be measured: %v", noBaseline)
		}
		u1 = c.usage()
	}
	link := c.dialQuiet("slow consumer", inst.Addr())
	socks, qerr := pinQueues(link.Conn())
	var sent uint64
	frame := make([]byte, 0, size+wire.HeaderSize)
	for {
		payload := make([]byte, size)
		fill(payload, 1, sent)
		frame = wire.AppendFrame(frame[:0], wire.KindData, 0, 1, sent, 0, payload)
		link.Conn().SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := link.Conn().Write(frame); err != nil {
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
	link.Conn().SetWriteDeadline(time.Time{})
	u2 := c.usage()
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
		bound := int64(ref.Config.OutHigh + ref.Config.Budgets.Bytes + 2*(size+wire.HeaderSize))
		c.Evidencef("reactor holds %d bytes (read − written), bound %d; backpressure pauses %d", held, bound, st.Counters.BackpressureOn)
		if held > bound {
			c.Fatalf("server holds %d KiB for a client that does not read, bound %d KiB", held>>10, bound>>10)
		}
	case u2.RSS >= 0:
		bound := int64(32 << 20)
		if ref != nil {
			bound = int64(4*(ref.Config.OutHigh+ref.Config.Budgets.Bytes)) + 16<<20
		}
		grew := u2.RSS - u1.RSS
		c.Evidencef("server RSS %d KiB; after %d MiB echoed to a client that reads %d KiB (grew %d KiB: its own, not the slow consumer's); with the slow consumer blocked %d KiB (grew %d KiB, bound %d KiB)",
			u0.RSS>>10, refSent>>20, u1.RSS>>10, (u1.RSS-u0.RSS)>>10, u2.RSS>>10, grew>>10, bound>>10)
		if held >= 0 {
			// Evidence, not judged: what a server hands to kernel queues
			// of its own (a proxy's hop to its backend) counts here too,
			// and those are bounded by the kernel, not by the server.
			c.Evidencef("the server stopped reading the slow consumer; sent less this connection's kernel queues: %d KiB (its own buffers, and any kernel queues of its own beyond them)", held>>10)
		}
		if grew > bound && noBaseline == nil {
			c.Fatalf("server memory grew by %d MiB for a client that does not read, beyond what the same bytes echoed to a reading client cost it, bound %d MiB", grew>>20, bound>>20)
		}
	default:
		c.Skipf("no way to observe this target's memory")
	}
	// Resume: every echo, in order.
	conn := link.Conn()
	for seq := uint64(0); seq < sent; seq++ {
		conn.SetReadDeadline(time.Now().Add(echoBound))
		g, err := readFrame(conn)
		if err != nil {
			c.Fatalf("after resuming: echo %d of %d: %v", seq, sent, err)
		}
		if why := checkEcho(g, 1, seq, size); why != "" {
			c.Fatalf("after resuming: echo %d: %s", seq, why)
		}
	}
	if noBaseline != nil && u2.RSS >= 0 {
		c.Inconclusivef("the server stopped reading the slow consumer and every echo came back, but its memory was not judged: what it does for a client that reads could not be measured (%v), so the slow consumer's share cannot be told", noBaseline)
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

func runW2(c *C) {
	inst := c.Instance()
	for i := 0; i < 10; i++ {
		p := c.dial(fmt.Sprintf("conn %d", i+1), inst.Addr())
		p.write(c, dataFrame(uint64(i+1), 0, 1))
		p.expectEcho(c, uint64(i+1), 0, 1, echoBound)
	}
	// The last echo's flush and its round end within microseconds; the
	// lead-in keeps them out of the window.
	time.Sleep(100 * time.Millisecond) // a measurement lead-in, not synchronisation
	u0 := c.usage()
	s0, statsErr := inst.Stats()
	const window = 500 * time.Millisecond
	time.Sleep(window) // the measurement window: the clients are idle
	u1 := c.usage()
	// A busy loop on a contended machine may get little of the window's
	// CPU. Its run-queue wait shows the contention, but is no measure of
	// spinning: an idle server's every timer wakeup waits behind the
	// machine's other work too (measured: 50–370 ms of a 500 ms window
	// beside 8 busy threads on 2 cores), so it is logged, not judged.
	cpu := u1.CPU - u0.CPU
	if u0.RunqWait >= 0 && u1.RunqWait >= 0 {
		c.Logf("server CPU %v (and %v waiting for a CPU) in a %v idle window", cpu, u1.RunqWait-u0.RunqWait, window)
	} else {
		c.Logf("server CPU %v in a %v idle window", cpu, window)
	}
	// A reference reactor also counts its epoll_waits, which do not depend
	// on how much CPU the machine spared: idle, each loop waits about twice
	// per timer tick (measured: 820–950 in 500 ticks; deadline timers,
	// fewer); a spinning loop waits every few microseconds it runs, so even
	// at 2% of a CPU it exceeds four per tick.
	var wakeups, wakeBound uint64
	var evidence string
	if statsErr == nil {
		if s1, err := inst.Stats(); err == nil {
			d := s1.Counters
			wakeups = d.EpollWaits - s0.Counters.EpollWaits
			tick := time.Millisecond
			if ref := inst.Reference(); ref != nil && ref.Config.Tick > 0 {
				tick = ref.Config.Tick
			}
			wakeBound = uint64(max(s1.Loops, 1)) * (4*uint64(window/tick) + 100)
			evidence = fmt.Sprintf("in the window: epoll_waits %d (zero-timeout %d; bound %d), events out %d with an empty queue %d, timers %d",
				wakeups, d.ZeroTimeoutWaits-s0.Counters.ZeroTimeoutWaits, wakeBound, d.EventsOut-s0.Counters.EventsOut,
				d.EpolloutEmpty-s0.Counters.EpolloutEmpty, d.TimersFired-s0.Counters.TimersFired)
			c.Logf("%s", evidence)
		}
	}
	if cpu > window/4 || wakeups > wakeBound && wakeBound > 0 {
		if evidence != "" {
			c.Evidencef("%s", evidence)
		}
		if wakeBound > 0 {
			c.Fatalf("server used %v CPU and waited in epoll %d times in a %v window with only idle clients (bounds %v; %d)", cpu, wakeups, window, window/4, wakeBound)
		}
		c.Fatalf("server used %v CPU in a %v window with only idle clients (bound %v)", cpu, window, window/4)
	}
}

// W3's stream: half of w3Small small frames of uneven sizes, w3Big large
// frames, then the other half, the small ones sent in groups of w3Group
// with a pause between groups, so that a server reads them in small
// pieces: the first half while the client does not read yet, the second
// once its output has backed up behind the large echoes. The client's
// receive buffer is small (dialNarrow), so the server's writes come back
// short whenever the client falls behind, the small pieces' too. A server
// whose writes of one piece can interleave with another's (overlapping
// asynchronous writes, common and forbidden in Asio) reorders bytes where
// a short write splits a piece, and small pieces are many.
const (
	w3Big, w3BigSize = 32, 512 << 10
	w3Small          = 512
	w3Group          = 8
)

// w3SmallSize is the payload size of W3's small frame i: 1 to 3,999
// bytes, spread so that no two neighbours are alike.
func w3SmallSize(i int) int { return 1 + (i*997+13)%3999 }

func runW3(c *C) {
	p := c.dialNarrow("conn 1", c.Instance().Addr())
	var plan []faults.Step
	var sizes []int
	small := func(from, to int) {
		for i := from; i < to; i++ {
			if i%w3Group == 0 {
				// The client stops reading for a moment: the server's
				// output backs up, and its next writes come back short.
				plan = append(plan, faults.Step{Op: faults.OpPauseReading, For: 2 * time.Millisecond}, faults.Step{Op: faults.OpSleep, For: time.Millisecond})
			}
			plan = append(plan, faults.Writes(dataFrame(1, uint64(len(sizes)), w3SmallSize(i)))...)
			sizes = append(sizes, w3SmallSize(i))
		}
	}
	small(0, w3Small/2)
	for range w3Big {
		plan = append(plan, faults.Writes(dataFrame(1, uint64(len(sizes)), w3BigSize))...)
		sizes = append(sizes, w3BigSize)
	}
	small(w3Small/2, w3Small)
	plan = faults.SlowConsumer{After: 0, Pause: 500 * time.Millisecond}.Apply(plan)
	errc := playAsync(c, p, plan)
	deadline := time.Now().Add(20 * time.Second)
	for i, sz := range sizes {
		p.expectEcho(c, 1, uint64(i), sz, time.Until(deadline))
	}
	if err := <-errc; err != nil {
		c.Fatalf("sending: %v", err)
	}
}

func runW4(c *C) {
	bound, limit, peers := c.lightProbes()
	// A server that has not paused reads the FIN at once, with echoes
	// queued; one that has is let on, 4 KiB at a time, until it reads it.
	// A connection given up on is closed: the server held nothing for it.
	l, finRead, held := c.halfCloseHolding(limit, 100, func(l *loaded) { l.conn.Close() })
	if !finRead || held <= c.echoThreshold() {
		c.Inconclusivef("the server was not seen reading the half-closed client's FIN while it held echoes for it (read it: %v; held then: at least %d bytes): it had nothing left to flush to a client that does not read", finRead, held)
	}
	// The half-closed client reads nothing from here on.
	results := probeAll(c, peers, wire.KindData, 2*bound)
	holding := false
	if err := l.sample(); err == nil {
		holding = l.held() > c.echoThreshold()
		c.Evidencef("after the probes: the server holds %d bytes for the half-closed client (%v)", l.held(), l.q)
	}
	// What was counted as held is a candidate until it arrives: a server
	// that dropped the echoes (and kept its end open) held nothing while
	// the others were probed. The bytes are what is owed here; the EOF
	// after them is I3's claim.
	delivered := l.readOwed(20*time.Second, c.Reference() != nil)
	if delivered == nil {
		c.Evidencef("afterwards the half-closed client read every echo owed (%d bytes): the server had held them", l.read)
	}
	if delivered != nil {
		c.Inconclusivef("the echoes counted as held for the half-closed client did not all arrive once it read (%v): the server did not hold them, so a client leaving echoes unread was not tested (that the echoes are owed is I3's claim)", delivered)
	}
	judgeProbes(c, peers, results, bound, "delayed while a half-closed client leaves its echoes unread")
	if !c.Failed() && !holding {
		c.Inconclusivef("the others were served, but by the end of the probes the server no longer held echoes for the half-closed client: it was not holding them throughout")
	}
}

// w4Bound is W4's bound on a light round trip: the wait the budgets allow
// for a round of the light sources and one whose output is blocked, each
// turn costing syscalls only (no callback cost is configured), 20 times,
// and at least 500 ms (the S1 floor).
func w4Bound(ref *Reference, light int) (time.Duration, string) {
	cfg := reactors.DefaultConfig()
	if ref != nil {
		cfg = ref.Config
	}
	const turn = 200 * time.Microsecond // read, write, epoll_ctl per turn on this VM, generously
	turns := cfg.Budgets.Consume + 1 + light
	wait := time.Duration(turns) * turn
	bound := max(500*time.Millisecond, 20*wait)
	return bound, fmt.Sprintf("wait ≤ (consume budget %d + 1 blocked + %d light) turns × %v = %v; bound max(500 ms, 20 × wait) = %v", cfg.Budgets.Consume, light, turn, wait, bound)
}
