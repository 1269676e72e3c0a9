//go:build linux

package reactors_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// TestUrgentAnswered: with urgent data on, every design answers each
// urgent byte with an urgent byte of the same value, while the in-band
// stream around it (frames written before and after, the urgent byte sent
// between them) comes back whole and in order: the byte never enters it.
// With urgent data off, the same byte gets no answer.
func TestUrgentAnswered(t *testing.T) {
	t.Parallel() // reactors of its own; its waits are bounds of seconds, and no neighbour answers urgent data
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Urgent = reactors.UrgentOOB
			if designs.Completion(d) {
				// Its receives are completions: no read of the urgent mark.
				if err := designs.ValidateFor(d, cfg); err == nil || !strings.Contains(err.Error(), "urgent = oob") {
					t.Errorf("%s with urgent data: %v, want a refusal naming urgent", d, err)
				}
				return
			}
			r := reactortest.Start(t, d, cfg)
			c, err := net.Dial("tcp", r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i := range 5 {
				if err := urgentRoundTrip(c.(*net.TCPConn), byte('a'+i), uint64(i)); err != nil {
					t.Fatalf("urgent byte %d: %v", i+1, err)
				}
			}
			reactortest.Settled(r, 20*time.Millisecond, 2*time.Second) // published counters lag the loops
			if got := r.Stats().Counters; got.UrgentIn != 5 || got.UrgentOut != 5 {
				t.Errorf("counters: urgent in %d, out %d; want 5 and 5", got.UrgentIn, got.UrgentOut)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		r := reactortest.Start(t, reactors.LT, reactors.DefaultConfig())
		c, err := net.Dial("tcp", r.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := urgentRoundTrip(c.(*net.TCPConn), 'z', 0); err == nil {
			t.Fatal("urgent data off, yet the urgent byte was answered")
		}
	})
}

// TestUrgentLandingBeforeARead: an urgent byte that lands on a data
// connection with nothing in-band queued ahead of it, after the loop last
// looked for urgent data and right before an in-band read, is answered.
// An in-band read that starts at an unread urgent mark skips the byte and
// the kernel forgets it, so the loop must not make that read. The seam
// runs before every in-band read; the first time it finds the socket's
// in-band queue empty once the first frame is in, the client sends the
// urgent byte and the second frame from there, and the read waits until
// the byte has arrived. A loop that never reads with its queue empty never
// offers that moment: the client then sends both once the first echo is
// back.
func TestUrgentLandingBeforeARead(t *testing.T) {
	t.Parallel() // reactors of its own; its waits are bounds of seconds
	for _, d := range []reactors.DesignName{reactors.LT, reactors.ET} {
		t.Run(string(d), func(t *testing.T) {
			const b = 'u'
			frames := urgentFrames(0)
			const (
				unarmed int32 = iota
				armed
				sentAtRead // the seam sent the byte right before a read
				sentByTest
			)
			var state atomic.Int32
			var seamErr atomic.Value
			var conn atomic.Pointer[net.TCPConn]
			cfg := reactors.DefaultConfig()
			cfg.Urgent = reactors.UrgentOOB
			reactors.SetBeforeInbandRead(&cfg, func(fd int) {
				if state.Load() != armed {
					return
				}
				if inq, err := unix.IoctlGetInt(fd, unix.SIOCINQ); err != nil || inq != 0 {
					return
				}
				if !state.CompareAndSwap(armed, sentAtRead) {
					return
				}
				c := conn.Load()
				raw, err := c.SyscallConn()
				if err == nil {
					err = sendUrgentThen(c, raw, b, frames[1])
				}
				if err != nil {
					seamErr.Store(err)
					return
				}
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
				if _, err := unix.Poll(fds, 1000); err != nil || fds[0].Revents&unix.POLLPRI == 0 {
					seamErr.Store(fmt.Errorf("urgent byte not at the server within 1 s (poll %v, revents %#x)", err, fds[0].Revents))
				}
			})
			r := reactortest.Start(t, d, cfg)
			nc, err := net.Dial("tcp", r.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c := nc.(*net.TCPConn)
			conn.Store(c)
			raw, err := c.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			state.Store(armed)
			if _, err := c.Write(frames[0]); err != nil {
				t.Fatal(err)
			}
			// The first echo's arrival says the loop is past the first frame.
			for deadline := time.Now().Add(2 * time.Second); state.Load() == armed && time.Now().Before(deadline); {
				if _, in, err := pollUrgent(raw); err != nil {
					t.Fatal(err)
				} else if in {
					break
				}
			}
			if state.CompareAndSwap(armed, sentByTest) {
				if err := sendUrgentThen(c, raw, b, frames[1]); err != nil {
					t.Fatal(err)
				}
			}
			err = awaitUrgentAndEchoes(c, raw, b, frames)
			if e, _ := seamErr.Load().(error); e != nil {
				t.Fatal(e)
			}
			how := "sent right before an in-band read on an empty queue"
			if state.Load() == sentByTest {
				how = "no in-band read started on an empty queue; sent after the first echo"
			}
			if err != nil {
				t.Fatalf("urgent byte %s: %v", how, err)
			}
			t.Logf("urgent byte %s: answered", how)
		})
	}
}

// urgentRoundTrip writes a DATA frame, the urgent byte b, and another
// frame, then waits up to 2 s for the urgent answer and both echoes, and
// checks all three.
func urgentRoundTrip(c *net.TCPConn, b byte, seq uint64) error {
	frames := urgentFrames(seq)
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	if _, err := c.Write(frames[0]); err != nil {
		return err
	}
	if err := sendUrgentThen(c, raw, b, frames[1]); err != nil {
		return err
	}
	return awaitUrgentAndEchoes(c, raw, b, frames)
}

// urgentFrames are the two DATA frames of round trip seq, sent before and
// after its urgent byte.
func urgentFrames(seq uint64) [2][]byte {
	payload := make([]byte, 100)
	frames := [2][]byte{}
	for i := range frames {
		frames[i] = wire.AppendFrame(nil, wire.KindData, 0, 1, 2*seq+uint64(i), 0, payload)
	}
	return frames
}

// sendUrgentThen sends the urgent byte b (MSG_OOB), then the frame after.
func sendUrgentThen(c *net.TCPConn, raw syscall.RawConn, b byte, after []byte) error {
	var sendErr error
	if err := raw.Write(func(fd uintptr) bool {
		sendErr = unix.Sendto(int(fd), []byte{b}, unix.MSG_OOB, nil)
		return true
	}); err != nil || sendErr != nil {
		return fmt.Errorf("send MSG_OOB: %v %v", err, sendErr)
	}
	_, err := c.Write(after)
	return err
}

// awaitUrgentAndEchoes waits up to 2 s for the answer to the urgent byte b
// and the echoes of both frames, and checks all three.
func awaitUrgentAndEchoes(c *net.TCPConn, raw syscall.RawConn, b byte, frames [2][]byte) error {
	want := append(append([]byte(nil), frames[0]...), frames[1]...)
	got := make([]byte, 0, len(want))
	gotUrgent := false
	deadline := time.Now().Add(2 * time.Second)
	buf := make([]byte, 4096)
	for (len(got) < len(want) || !gotUrgent) && time.Now().Before(deadline) {
		// As any receiver of urgent data must: take the urgent byte before
		// an in-band read can pass its mark (which would lose it).
		pri, in, err := pollUrgent(raw)
		if err != nil {
			return err
		}
		if pri && !gotUrgent {
			if gotUrgent, err = recvUrgent(raw, b); err != nil {
				return err
			}
			continue
		}
		if in && len(got) < len(want) {
			n, err := c.Read(buf[:min(len(buf), len(want)-len(got))])
			if err != nil {
				return err
			}
			got = append(got, buf[:n]...)
		}
	}
	switch {
	case !gotUrgent:
		return fmt.Errorf("no urgent answer within 2 s (in-band: %d of %d bytes back)", len(got), len(want))
	case !bytes.Equal(got, want):
		return fmt.Errorf("in-band stream: %d bytes back, want the two frames' %d unchanged", len(got), len(want))
	}
	return nil
}

// recvUrgent reads the urgent byte if one has come, and checks it is b.
func recvUrgent(raw interface {
	Read(func(uintptr) bool) error
}, b byte) (bool, error) {
	var got [1]byte
	var n int
	var rerr error
	if err := raw.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), got[:], unix.MSG_OOB|unix.MSG_DONTWAIT)
		return true
	}); err != nil {
		return false, err
	}
	switch {
	case rerr == unix.EINVAL || rerr == unix.EAGAIN:
		return false, nil
	case rerr != nil:
		return false, rerr
	case n == 1 && got[0] != b:
		return false, fmt.Errorf("urgent answer %q, want %q", got[0], b)
	}
	return n == 1, nil
}

// pollUrgent waits up to 20 ms for the socket to report urgent data
// (POLLPRI) or in-band data (POLLIN).
func pollUrgent(raw interface {
	Read(func(uintptr) bool) error
}) (pri, in bool, err error) {
	var perr error
	if err := raw.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI}}
		_, perr = unix.Poll(fds, 20)
		pri, in = fds[0].Revents&unix.POLLPRI != 0, fds[0].Revents&unix.POLLIN != 0
		return true
	}); err != nil {
		return false, false, err
	}
	if perr == unix.EINTR {
		perr = nil
	}
	return pri, in, perr
}
