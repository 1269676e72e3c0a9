//go:build linux

package ingress

import (
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkPushDrain: one producer and the consumer on the same goroutine, in
// owner-loop rhythm: 64 pushes, then Acknowledge and Drain(64). Each batch
// pays one eventfd write and one read, so ns/op is the per-item cost including
// the amortised wakeup.
func BenchmarkPushDrain(b *testing.B) {
	q := newQueue[item](b, 1024)
	var sink uint32
	fn := func(v item) { sink += v.seq }
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	cpu := startCPU(b, unix.RUSAGE_THREAD)
	i := 0
	for b.Loop() {
		if !q.Push(item{0, uint32(i)}) {
			b.Fatalf("push %d refused", i)
		}
		i++
		if i%64 == 0 {
			q.Acknowledge()
			q.Drain(64, fn)
		}
	}
	cpu.report(b)
	q.Drain(64, fn)
	_ = sink
}

// BenchmarkPushParallel: b.RunParallel producers against one owner loop on a
// locked OS thread that blocks in epoll_wait when idle, as a reactor does. A
// producer that finds the queue full yields and retries; ns/op is per item
// delivered.
func BenchmarkPushParallel(b *testing.B) {
	q := newQueue[int](b, 4096)
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(epfd)
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(q.Fd())}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, q.Fd(), &ev); err != nil {
		b.Fatal(err)
	}

	const stop = -1
	var delivered, full atomic.Int64
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		events := make([]unix.EpollEvent, 1)
		var n int64
		stopped := false
		fn := func(v int) {
			if v == stop {
				stopped = true
				return
			}
			n++
		}
		pending := false
		for !stopped {
			timeout := -1 // the benchmark ends with a stop item, never by timeout
			if pending {
				timeout = 0
			}
			k, err := unix.EpollWait(epfd, events, timeout)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				done <- err
				return
			}
			if k > 0 {
				q.Acknowledge()
			}
			_, pending = q.Drain(64, fn)
		}
		delivered.Store(n)
		done <- nil
	}()

	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b, unix.RUSAGE_SELF)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for !q.Push(1) {
				full.Add(1)
				runtime.Gosched()
			}
		}
	})
	for !q.Push(stop) {
		runtime.Gosched()
	}
	if err := <-done; err != nil {
		b.Fatalf("owner: epoll_wait: %v", err)
	}
	b.StopTimer()
	cpu.report(b)
	if got := delivered.Load(); got != int64(b.N) {
		b.Fatalf("delivered %d of %d", got, b.N)
	}
	b.ReportMetric(float64(full.Load())/float64(b.N), "full-retries/op")
}

// cpuClock measures CPU time (user+sys) across a benchmark. On a machine
// shared with other work, wall-clock ns/op mostly measures the neighbours;
// cpu-ns/op is what the queue itself costs.
type cpuClock struct {
	who   int
	start int64
}

func startCPU(b *testing.B, who int) cpuClock {
	return cpuClock{who: who, start: cpuNanos(b, who)}
}

func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(cpuNanos(b, c.who)-c.start)/float64(b.N), "cpu-ns/op")
}

func cpuNanos(b *testing.B, who int) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
