//go:build linux

package ingress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// item is what the tests push: who pushed it and its place in that producer's
// sequence, so order, loss and duplication are all visible.
type item struct {
	producer uint32
	seq      uint32
}

func newQueue[T any](t testing.TB, capacity int) *Queue[T] {
	t.Helper()
	q, err := New[T](capacity)
	if err != nil {
		t.Fatalf("New(%d): %v", capacity, err)
	}
	t.Cleanup(func() {
		if err := q.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return q
}

// readCounter reads the eventfd counter the way the kernel reports it, without
// going through Acknowledge. It returns 0 when the read would block (counter 0).
func readCounter(t *testing.T, fd int) uint64 {
	t.Helper()
	var buf [8]byte
	n, err := unix.Read(fd, buf[:])
	if errors.Is(err, unix.EAGAIN) {
		return 0
	}
	if err != nil || n != 8 {
		t.Fatalf("read eventfd: n=%d err=%v", n, err)
	}
	return binary.NativeEndian.Uint64(buf[:])
}

func drainAll[T any](q *Queue[T]) []T {
	var got []T
	for {
		n, pending := q.Drain(64, func(v T) { got = append(got, v) })
		if n == 0 && !pending {
			return got
		}
	}
}

func TestNewCapacity(t *testing.T) {
	cases := []struct {
		in      int
		wantCap int
		wantErr bool
	}{
		{in: -1, wantErr: true},
		{in: 0, wantErr: true},
		{in: 1, wantCap: 2},
		{in: 2, wantCap: 2},
		{in: 3, wantCap: 4},
		{in: 5, wantCap: 8},
		{in: 64, wantCap: 64},
		{in: 65, wantCap: 128},
		{in: MaxCapacity + 1, wantErr: true},
	}
	for _, c := range cases {
		q, err := New[int](c.in)
		if c.wantErr {
			if !errors.Is(err, ErrCapacity) {
				t.Errorf("New(%d): err = %v, want ErrCapacity", c.in, err)
			}
			if q != nil {
				t.Errorf("New(%d): queue = %p, want nil with an error", c.in, q)
			}
			continue
		}
		if err != nil {
			t.Errorf("New(%d): %v", c.in, err)
			continue
		}
		if got := q.Cap(); got != c.wantCap {
			t.Errorf("New(%d).Cap() = %d, want %d", c.in, got, c.wantCap)
		}
		// The capacity is real: exactly Cap pushes fit.
		for i := range c.wantCap {
			if !q.Push(i) {
				t.Errorf("New(%d): push %d of %d refused", c.in, i+1, c.wantCap)
			}
		}
		if q.Push(-1) {
			t.Errorf("New(%d): push beyond Cap %d accepted", c.in, c.wantCap)
		}
		if err := q.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// TestNewEventfdErrorNamesSyscall makes eventfd fail for real (EMFILE, by
// lowering RLIMIT_NOFILE to the lowest free descriptor number) and checks the
// error names the syscall and keeps the errno.
func TestNewEventfdErrorNamesSyscall(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	probe, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/null: %v", err)
	}
	unix.Close(probe) // probe is now the lowest free number
	low := old
	low.Cur = uint64(probe)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	q, err := New[int](8)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); rerr != nil {
		t.Fatalf("restore rlimit: %v", rerr)
	}
	if err == nil {
		q.Close()
		t.Fatalf("New succeeded with RLIMIT_NOFILE=%d", probe)
	}
	var se *os.SyscallError
	if !errors.As(err, &se) || se.Syscall != "eventfd" {
		t.Errorf("err = %v, want an *os.SyscallError for eventfd", err)
	}
	if !errors.Is(err, unix.EMFILE) {
		t.Errorf("err = %v, want it to wrap EMFILE", err)
	}
}

func TestFdIsCloexecAndNonblocking(t *testing.T) {
	q := newQueue[int](t, 4)
	fdFlags, err := unix.FcntlInt(uintptr(q.Fd()), unix.F_GETFD, 0)
	if err != nil {
		t.Fatalf("fcntl F_GETFD: %v", err)
	}
	if fdFlags&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd flags %#x: FD_CLOEXEC not set", fdFlags)
	}
	flFlags, err := unix.FcntlInt(uintptr(q.Fd()), unix.F_GETFL, 0)
	if err != nil {
		t.Fatalf("fcntl F_GETFL: %v", err)
	}
	if flFlags&unix.O_NONBLOCK == 0 {
		t.Errorf("status flags %#x: O_NONBLOCK not set", flFlags)
	}
}

func TestFIFOAndFull(t *testing.T) {
	q := newQueue[int](t, 5) // rounds up to 8
	next := 0
	for range 8 {
		if !q.Push(next) {
			t.Fatalf("push %d refused below capacity", next)
		}
		next++
	}
	if q.Push(next) {
		t.Fatalf("push into a full queue (Len %d, Cap %d) accepted", q.Len(), q.Cap())
	}
	if got := q.Len(); got != 8 {
		t.Errorf("Len() full = %d, want 8", got)
	}
	var got []int
	n, pending := q.Drain(3, func(v int) { got = append(got, v) })
	if n != 3 || !pending {
		t.Errorf("Drain(3) = %d, %v; want 3, true", n, pending)
	}
	if got := q.Len(); got != 5 {
		t.Errorf("Len() after draining 3 = %d, want 5", got)
	}
	// The freed cells are usable again, and the ring wraps.
	for range 3 {
		if !q.Push(next) {
			t.Fatalf("push %d refused after Drain freed room", next)
		}
		next++
	}
	if q.Push(next) {
		t.Fatalf("push into a full wrapped queue accepted")
	}
	got = append(got, drainAll(q)...)
	if len(got) != 11 {
		t.Fatalf("drained %d items %v, want 11", len(got), got)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d = %d, want %d (FIFO order broken): %v", i, v, i, got)
		}
	}
	if got := q.Len(); got != 0 {
		t.Errorf("Len() empty = %d, want 0", got)
	}
}

// TestFIFOPerProducer runs several producers concurrently and checks each one's
// items come out in its own order, none lost or duplicated.
func TestFIFOPerProducer(t *testing.T) {
	const producers, per = 4, 20000
	q := newQueue[item](t, 1024)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for s := range per {
				for !q.Push(item{uint32(p), uint32(s)}) {
				}
			}
		})
	}
	next := make([]uint32, producers)
	total := 0
	fail := ""
	for total < producers*per && fail == "" {
		n, _ := q.Drain(64, func(v item) {
			if fail == "" && v.seq != next[v.producer] {
				fail = fmt.Sprintf("producer %d: got seq %d, want %d", v.producer, v.seq, next[v.producer])
			}
			next[v.producer] = v.seq + 1
		})
		total += n
	}
	wg.Wait()
	if fail != "" {
		t.Fatal(fail)
	}
	if n, pending := q.Drain(64, func(item) {}); n != 0 || pending {
		t.Errorf("after all %d items: Drain = %d, %v; want 0, false", total, n, pending)
	}
}

func TestDrainBudgetAndPending(t *testing.T) {
	q := newQueue[int](t, 256)
	for i := range 200 {
		q.Push(i)
	}
	noop := func(int) {}
	if n, pending := q.Drain(0, noop); n != 0 || !pending {
		t.Errorf("Drain(0) = %d, %v; want 0, true", n, pending)
	}
	if n, pending := q.Drain(64, nil); n != 0 || !pending {
		t.Errorf("Drain(64, nil) = %d, %v; want 0, true", n, pending)
	}
	want := []struct {
		n       int
		pending bool
	}{{64, true}, {64, true}, {64, true}, {8, false}, {0, false}}
	for i, w := range want {
		n, pending := q.Drain(64, noop)
		if n != w.n || pending != w.pending {
			t.Errorf("round %d: Drain(64) = %d, %v; want %d, %v", i, n, pending, w.n, w.pending)
		}
	}
	// Exactly the budget left: pending must turn false with the last item.
	for i := range 64 {
		q.Push(i)
	}
	if n, pending := q.Drain(64, noop); n != 64 || pending {
		t.Errorf("Drain(64) of exactly 64 = %d, %v; want 64, false", n, pending)
	}
}

// TestDrainCallbackMayPushAndPanic checks the promises Drain makes about fn:
// the item has left the queue before fn runs, so fn may push into the same
// queue, and a panic in fn loses only the item being handled.
func TestDrainCallbackMayPushAndPanic(t *testing.T) {
	q := newQueue[int](t, 8)
	q.Push(0)
	var got []int
	n, _ := q.Drain(10, func(v int) {
		got = append(got, v)
		if v < 4 {
			q.Push(v + 1)
		}
	})
	if n != 5 || len(got) != 5 || got[4] != 4 {
		t.Fatalf("re-entrant push: Drain = %d, items %v; want 5 items 0..4", n, got)
	}

	for i := range 4 {
		q.Push(i)
	}
	got = got[:0]
	func() {
		defer func() { _ = recover() }()
		q.Drain(10, func(v int) {
			if v == 1 {
				panic("callback failure")
			}
			got = append(got, v)
		})
	}()
	got = append(got, drainAll(q)...)
	if len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("after a panic on item 1: got %v, want [0 2 3]", got)
	}
}

// TestCoalescing: many pushes without an Acknowledge are one wakeup, not one
// per item. The counter is read directly from the fd.
func TestCoalescing(t *testing.T) {
	q := newQueue[int](t, 2048)
	for i := range 1000 {
		if !q.Push(i) {
			t.Fatalf("push %d refused", i)
		}
	}
	if got := readCounter(t, q.Fd()); got != 1 {
		t.Fatalf("eventfd counter after 1000 pushes = %d, want exactly 1", got)
	}
	// Without an Acknowledge the flag stays set: more pushes write nothing.
	for i := range 10 {
		q.Push(i)
	}
	if got := readCounter(t, q.Fd()); got != 0 {
		t.Fatalf("eventfd counter after pushes with the flag set = %d, want 0", got)
	}
	// Acknowledge re-opens the gate: the next push writes once more.
	q.Acknowledge()
	q.Push(1)
	q.Push(2)
	if got := readCounter(t, q.Fd()); got != 1 {
		t.Fatalf("eventfd counter after Acknowledge and 2 pushes = %d, want 1", got)
	}
	if got := len(drainAll(q)); got != 1012 {
		t.Errorf("drained %d, want 1012", got)
	}
	if err := q.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

// TestCoalescingConcurrent: with many producers racing for the flag, only the
// one that flips it writes.
func TestCoalescingConcurrent(t *testing.T) {
	const producers, per = 8, 1000
	q := newQueue[int](t, producers*per)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			<-start
			for i := range per {
				q.Push(i)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := readCounter(t, q.Fd()); got != 1 {
		t.Fatalf("eventfd counter after %d concurrent pushes = %d, want exactly 1", producers*per, got)
	}
	if got := q.Len(); got != producers*per {
		t.Errorf("Len() = %d, want %d", got, producers*per)
	}
}

func TestAcknowledgeEmptiesCounter(t *testing.T) {
	q := newQueue[int](t, 8)
	q.Acknowledge() // counter zero: EAGAIN must be harmless
	q.Push(1)
	q.Acknowledge()
	if got := readCounter(t, q.Fd()); got != 0 {
		t.Errorf("eventfd counter after Acknowledge = %d, want 0", got)
	}
	if err := q.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

// TestAcknowledgeRacingPush puts a push, deterministically, inside
// Acknowledge between its read of the eventfd and its clearing of the flag.
// That push writes nothing (the flag is still set), so the Drain that follows
// must see its item; and the flag must end clear, so the next push writes
// again. Swapping Acknowledge's two steps (clear, then read) fails the second
// check: the racing push's write is swallowed and the queue goes deaf.
func TestAcknowledgeRacingPush(t *testing.T) {
	q := newQueue[int](t, 8)
	q.Push(1)
	testHookAcknowledge = func() { q.Push(2) }
	q.Acknowledge()
	testHookAcknowledge = nil
	if got := drainAll(q); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("Drain after Acknowledge = %v, want [1 2]: the racing push was not seen", got)
	}
	if got := readCounter(t, q.Fd()); got != 0 {
		t.Fatalf("eventfd counter after Acknowledge and Drain = %d, want 0", got)
	}
	q.Push(3)
	if got := readCounter(t, q.Fd()); got != 1 {
		t.Fatalf("eventfd counter after the next push = %d, want 1: the queue no longer wakes its owner", got)
	}
}

func TestClose(t *testing.T) {
	q, err := New[int](8)
	if err != nil {
		t.Fatal(err)
	}
	fd := q.Fd()
	q.Push(1)
	q.Push(2)
	if err := q.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Fatalf("second Close: %v, want nil (idempotent)", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("fcntl on the eventfd after Close: err = %v, want EBADF", err)
	}
	if !q.Closed() {
		t.Error("Closed() = false after Close")
	}
	if got := q.Fd(); got != -1 {
		t.Errorf("Fd() after Close = %d, want -1", got)
	}
	if q.Push(3) {
		t.Error("Push after Close returned true")
	}
	q.Acknowledge() // must not touch the released fd number
	if got := drainAll(q); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("Drain after Close = %v, want the items pushed before it [1 2]", got)
	}
	if err := q.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

// TestCloseRacesProducers: Close while producers are notifying must neither
// crash nor let a write reach the released fd number. A pipe opened right
// after Close usually gets that number; it must stay empty. The full tier
// races 20 rounds to catch a rare interleaving; -short races one.
func TestCloseRacesProducers(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 1
	}
	for round := range rounds {
		q, err := New[int](64)
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		loop := func(step func()) {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					step()
				}
			})
		}
		for range 2 {
			loop(func() { q.Push(1) })
		}
		running := make(chan struct{})
		var once sync.Once
		loop(func() { // the one consumer
			q.Acknowledge()
			if n, _ := q.Drain(64, func(int) {}); n > 0 {
				once.Do(func() { close(running) })
			}
		})
		<-running // producers and consumer are all in their loops
		if err := q.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		var buf [16]byte
		n, rerr := unix.Read(p[0], buf[:])
		unix.Close(p[0])
		unix.Close(p[1])
		if n > 0 {
			t.Fatalf("round %d: %d bytes reached a pipe that reused the closed eventfd number", round, n)
		}
		if !errors.Is(rerr, unix.EAGAIN) {
			t.Fatalf("round %d: read pipe: %v", round, rerr)
		}
		if err := q.Err(); err != nil {
			t.Fatalf("round %d: Err() = %v", round, err)
		}
	}
}

func TestPushDrainZeroAllocs(t *testing.T) {
	q := newQueue[item](t, 64)
	var sink uint32
	fn := func(v item) { sink += v.seq }
	allocs := testing.AllocsPerRun(1000, func() {
		q.Push(item{1, 2})
		q.Push(item{1, 3})
		q.Acknowledge() // so the next push takes the eventfd write path too
		q.Drain(64, fn)
	})
	if allocs != 0 {
		t.Errorf("Push+Acknowledge+Drain: %.1f allocs/op, want 0", allocs)
	}
	_ = sink
}
