//go:build linux

package uring

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSendAndTimedOutWaitAllocateNothing: a loop that sends from Go memory
// every round and waits with a timeout that passes allocates nothing per
// round once warm: a released pin's entry is reused, and a wait's ETIME is
// no formatted error. (A load generator submits a send per connection per
// round; an allocation there is one per few frames.)
func TestSendAndTimedOutWaitAllocateNothing(t *testing.T) {
	r := newRing(t, Config{Entries: 8})
	fds := socketPair(t)
	buf := make([]byte, 64)
	sink := make([]byte, 64)
	round := func() {
		if _, err := r.Send(fds[0], buf, 7); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(1, time.Second); err != nil {
			t.Fatal(err)
		}
		sent := 0
		if _, err := r.Reap(func(c CQE) { sent += int(c.Res) }); err != nil || sent != len(buf) {
			t.Fatalf("send completed with %d bytes (err %v), want %d", sent, err, len(buf))
		}
		if n, err := unix.Read(fds[1], sink); err != nil || n != len(buf) {
			t.Fatalf("read %d bytes (err %v), want %d", n, err, len(buf))
		}
		if ready, err := r.Wait(1, time.Microsecond); err != nil || ready != 0 {
			t.Fatalf("an idle wait: %d ready, err %v; want a timeout", ready, err)
		}
	}
	round() // warm: the pin table's first entry, the runtime's pinner
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Errorf("%.1f allocations per round of a send and a timed-out wait, want 0", n)
	}
	if r.Pinned() != 0 {
		t.Errorf("%d user_data values still pinned after every send completed", r.Pinned())
	}
}
