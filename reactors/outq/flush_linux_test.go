//go:build linux

package outq

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketpair returns a non-blocking AF_UNIX stream pair with a small send
// buffer on w, so writes are short and EAGAIN comes quickly, and r switched to
// blocking for a simple reader goroutine.
func socketpair(t testing.TB) (w, r int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatalf("setsockopt SO_SNDBUF: %v", err)
	}
	if err := unix.SetNonblock(fds[1], false); err != nil {
		t.Fatalf("set blocking: %v", err)
	}
	return fds[0], fds[1]
}

// waitWritable blocks until fd is writable (what EPOLLOUT would say).
func waitWritable(t testing.TB, fd int) {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(pfd, 5000)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("poll POLLOUT = %d, %v", n, err)
		}
		return
	}
}

// reader reads fd until EOF or error and sends what it read on the channel;
// with want == 0 it discards the bytes (benchmarks: no allocation).
func reader(fd int, want int, slow bool) <-chan []byte {
	done := make(chan []byte, 1)
	go func() {
		got := make([]byte, 0, want)
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EINTR {
				continue
			}
			if n <= 0 || err != nil {
				break
			}
			if want == 0 {
				continue
			}
			got = append(got, buf[:n]...)
			if slow && len(got)%(64<<10) < n {
				time.Sleep(time.Millisecond) // let the writer hit EAGAIN
			}
		}
		done <- got
	}()
	return done
}

func TestFlushSocketpair(t *testing.T) {
	const total = 4 << 20
	w, r := socketpair(t)
	src := make([]byte, total)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	done := reader(r, total, true)

	q := New(DefaultLimits())
	lim := q.Limits()
	var (
		sent, pos       int
		blocks, shorts  int
		pauses, resumes int
		deadline        = time.Now().Add(30 * time.Second)
	)
	for sent < total {
		if time.Now().After(deadline) {
			t.Fatalf("stuck: sent %d of %d", sent, total)
		}
		// The read side of a reactor: produce only while not paused.
		for !q.Paused() && pos < total {
			n := min(1+rng.IntN(100<<10), total-pos)
			if err := q.Append(src[pos : pos+n]); err != nil {
				t.Fatalf("Append: %v", err)
			}
			pos += n
			if q.Paused() {
				pauses++
				if q.Len() < lim.High {
					t.Fatalf("paused at Len %d < High %d", q.Len(), lim.High)
				}
			}
		}
		before, wasPaused := q.Len(), q.Paused()
		n, blocked, err := q.Flush(w)
		if err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if n != before-q.Len() {
			t.Fatalf("Flush returned %d but the queue shrank by %d", n, before-q.Len())
		}
		if wasPaused && !q.Paused() {
			resumes++
		}
		sent += n
		switch {
		case blocked:
			blocks++
			if n > 0 {
				shorts++ // progress, then EAGAIN: the last write was short
			}
			waitWritable(t, w)
		case !q.Empty():
			t.Fatal("Flush returned without blocking or error but left bytes")
		}
	}
	if err := unix.Shutdown(w, unix.SHUT_WR); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	got := <-done
	if !bytes.Equal(got, src) {
		i := 0
		for i < min(len(got), len(src)) && got[i] == src[i] {
			i++
		}
		t.Fatalf("received %d bytes, want %d; first difference at byte %d", len(got), len(src), i)
	}
	if blocks == 0 || shorts == 0 {
		t.Errorf("EAGAIN %d times, short flushes %d: the small SO_SNDBUF did not exercise them", blocks, shorts)
	}
	if pauses < 2 || resumes < 1 {
		t.Errorf("%d pauses, %d resumes: backpressure not exercised", pauses, resumes)
	}
	t.Logf("4 MiB: %d EAGAIN, %d short writes, %d pauses, %d resumes", blocks, shorts, pauses, resumes)
}

func TestFlushErrors(t *testing.T) {
	w, r := socketpair(t)
	unix.Close(r) // peer gone: EPIPE (Go ignores SIGPIPE on non-stdio fds)
	q := New(DefaultLimits())
	q.Append([]byte("hello"))
	n, blocked, err := q.Flush(w)
	if n != 0 || blocked || !errors.Is(err, unix.EPIPE) {
		t.Errorf("Flush to a closed peer = %d, %v, %v; want 0, false, EPIPE", n, blocked, err)
	}
	if err != nil && err.Error() != "write: broken pipe" {
		t.Errorf("error text %q does not name the syscall", err)
	}
	if q.Len() != 5 {
		t.Errorf("failed Flush consumed bytes: Len %d", q.Len())
	}
	_, _, err = q.Flush(-1)
	if !errors.Is(err, unix.EBADF) {
		t.Errorf("Flush(-1): %v, want EBADF", err)
	}
	var empty Queue
	if n, blocked, err := empty.Flush(-1); n != 0 || blocked || err != nil {
		t.Errorf("Flush of an empty queue = %d, %v, %v; want no syscall", n, blocked, err)
	}
}

func TestFlushZeroAlloc(t *testing.T) {
	w, r := socketpair(t)
	done := reader(r, 0, false)
	q := New(DefaultLimits())
	frame := make([]byte, 64)
	cycle := func() {
		for range 16 {
			q.Append(frame)
		}
		for !q.Empty() {
			if _, blocked, err := q.Flush(w); err != nil {
				t.Fatal(err)
			} else if blocked {
				waitWritable(t, w)
			}
		}
	}
	for range 100 {
		cycle()
	}
	if a := testing.AllocsPerRun(1000, cycle); a != 0 {
		t.Errorf("Append+Flush allocates %v times per cycle", a)
	}
	unix.Shutdown(w, unix.SHUT_WR)
	<-done
}

func BenchmarkAppendFlush(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("frames=%d", batch), func(b *testing.B) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			w, r := fds[0], fds[1]
			unix.SetNonblock(r, false)
			done := reader(r, 0, false)
			q := New(DefaultLimits())
			frame := make([]byte, 64)
			b.ReportAllocs()
			b.SetBytes(int64(len(frame) * batch))
			for b.Loop() {
				for range batch {
					q.Append(frame)
				}
				for !q.Empty() {
					if _, blocked, err := q.Flush(w); err != nil {
						b.Fatal(err)
					} else if blocked {
						waitWritable(b, w)
					}
				}
			}
			b.StopTimer()
			unix.Shutdown(w, unix.SHUT_WR)
			<-done
			unix.Close(w)
			unix.Close(r)
		})
	}
}
