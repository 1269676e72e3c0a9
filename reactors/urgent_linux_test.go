//go:build linux

package reactors_test

import (
	"bytes"
	"fmt"
	"net"
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

// urgentRoundTrip writes a DATA frame, the urgent byte b, and another
// frame, then waits up to 2 s for the urgent answer and both echoes, and
// checks all three.
func urgentRoundTrip(c *net.TCPConn, b byte, seq uint64) error {
	payload := make([]byte, 100)
	frames := [2][]byte{}
	for i := range frames {
		frames[i] = wire.AppendFrame(nil, wire.KindData, 0, 1, 2*seq+uint64(i), 0, payload)
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	if _, err := c.Write(frames[0]); err != nil {
		return err
	}
	var sendErr error
	if err := raw.Write(func(fd uintptr) bool {
		sendErr = unix.Sendto(int(fd), []byte{b}, unix.MSG_OOB, nil)
		return true
	}); err != nil || sendErr != nil {
		return fmt.Errorf("send MSG_OOB: %v %v", err, sendErr)
	}
	if _, err := c.Write(frames[1]); err != nil {
		return err
	}
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
