//go:build linux

package loadgen

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/wire"
)

// TestSteadyWritesOncePerGrain: a steady source batched by the send grain
// makes at most one write per grain, however its answers fall between the
// grain's boundaries: answers settle frames and free the window, but the
// frames due at their arrival wait for the grain's deadline (sending them
// then split every grain's batch in two). The loop's clock is moved by
// hand, 1 µs at a time, through 20 ms of a 100,000 frames/s schedule (5
// frames a grain), and the frames written are answered 7 to 43 µs later, in
// order, so that answers arrive at every phase of the grain; the writes are the
// kernel's count for this thread (/proc/thread-self/io), to /dev/null.
// Precondition: the schedule was kept (every frame due by the last grain
// deadline reached was sent) and the answers were taken as echoes.
func TestSteadyWritesOncePerGrain(t *testing.T) {
	const span, step = 20 * time.Millisecond, time.Microsecond
	answerAfter := func(seq uint64) int64 { return int64(7*time.Microsecond) + int64(seq%5)*int64(9*time.Microsecond) }
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, done := devNullConn(t, Config{DataAddr: "127.0.0.1:1", Steady: 1, Rate: 100e3, Duration: time.Hour})
	defer done()
	if c.l.grain != int64(sendGrain) {
		t.Fatalf("grain %d at 100k frames/s, want %d: the source is not batched, the test says nothing", c.l.grain, sendGrain)
	}
	type answer struct {
		seq uint64
		due int64 // when it arrives
	}
	var pending []answer // of frames written, not yet handed over, in order
	var echo []byte
	lastDue := int64(0)
	before := threadWrites(t)
	for now := int64(0); now < int64(span); now += int64(step) {
		c.l.now = now
		sent := c.sentSeq
		echo = echo[:0]
		for len(pending) > 0 && now >= pending[0].due {
			echo = appendEcho(echo, c, pending[0].seq)
			pending = pending[1:]
		}
		if len(echo) > 0 {
			c.onAnswers(echo, now)
		}
		if c.deadline() <= now {
			c.fire()
		}
		for seq := sent; seq < c.sentSeq; seq++ {
			pending = append(pending, answer{seq, max(now+answerAfter(seq), lastDue)})
			lastDue = pending[len(pending)-1].due // a stream: in order
		}
	}
	writes := threadWrites(t) - before
	grains := int64(span / sendGrain)
	lastBoundary := (int64(span) - int64(step)) / c.l.grain * c.l.grain // the last grain's deadline the clock reached
	due := c.firstFrom(lastBoundary + 1)                                // the frames intended up to it
	t.Logf("%d frames sent, %d echoed, in %d writes over %d grains", c.acct.Sent, c.acct.Echoed, writes, grains)
	if c.acct.Sent < due || c.acct.Echoed == 0 || c.acct.CorruptedAnswers+c.acct.Unexpected+c.acct.Duplicated != 0 {
		t.Fatalf("precondition: %d frames due, accounting %+v", due, c.acct)
	}
	if writes > grains+1 {
		t.Errorf("%d writes in %d grains (%.2f per frame): more than one a grain", writes, grains, float64(writes)/float64(c.acct.Sent))
	}
}

// appendEcho appends the echo of c's frame seq (as sent) to b.
func appendEcho(b []byte, c *conn, seq uint64) []byte {
	payload := make([]byte, c.frameSize-wire.HeaderSize)
	wire.FillPattern(payload, c.token, seq)
	return wire.AppendFrame(b, c.frameKind, 0, c.token, seq, uint64(c.ring[seq&c.mask].stamp), payload)
}

// threadWrites is the kernel's count of write calls of the calling thread
// (locked to it), from /proc/thread-self/io.
func threadWrites(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("/proc/thread-self/io: no syscw line")
	return 0
}
