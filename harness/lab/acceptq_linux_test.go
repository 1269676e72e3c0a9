//go:build linux

package lab

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenReusePort listens on addr with SO_REUSEPORT, so that a second
// listener may share its port.
func listenReusePort(t *testing.T, addr string) net.Listener {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		if err != nil {
			return err
		}
		return serr
	}}
	l, err := lc.Listen(context.Background(), "tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestAcceptQueueSeesABacklog: connections made to listeners that never
// accept wait in their accept queues; the sampler sees at least as many
// as were connected, per listener and summed, and nothing on another
// port.
func TestAcceptQueueSeesABacklog(t *testing.T) {
	first := listenReusePort(t, "127.0.0.1:0")
	port := first.Addr().(*net.TCPAddr).Port
	listenReusePort(t, first.Addr().String())
	other, err := net.Listen("tcp4", "127.0.0.1:0") // a second port, never counted
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	s, err := newAcceptQueueSampler(port)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(AcceptQueueEvery, stop)
	}()
	from := time.Now()
	const n = 24
	for range n {
		for _, addr := range []string{first.Addr().String(), other.Addr().String()} {
			c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
	}
	// Long enough for a whole bucket to hold the full backlog.
	time.Sleep(3 * acceptQueueStep)
	close(stop)
	<-done
	to := time.Now()

	q := s.result()
	if q.Failed > 0 || q.Samples == 0 {
		t.Fatalf("samples %d, failed %d: %s", q.Samples, q.Failed, q.Error)
	}
	if q.Listeners != 2 || q.Port != port || q.Backlog == 0 {
		t.Errorf("listeners %d (want 2), port %d (want %d), backlog %d", q.Listeners, q.Port, port, q.Backlog)
	}
	p, ok := q.PeakBetween(from, to)
	if !ok {
		t.Fatalf("no bucket inside the period: %+v", q.Buckets)
	}
	if p.Sum < n {
		t.Errorf("peak %d, want at least the %d connections waiting", p.Sum, n)
	}
	if len(p.PerListener) != 2 || p.PerListener[0]+p.PerListener[1] < n {
		t.Errorf("per-listener peaks %v, want two summing to at least %d", p.PerListener, n)
	}
	if p.Sum > 2*n {
		t.Errorf("peak %d counts more than this port's %d connections", p.Sum, n)
	}
	if _, ok := q.PeakBetween(to, to.Add(time.Second)); ok {
		t.Errorf("a period after the run has buckets")
	}
}

// TestAcceptQueueBucketsStayBounded: a long record merges neighbouring
// buckets and keeps each one's maxima.
func TestAcceptQueueBucketsStayBounded(t *testing.T) {
	s := &acceptQueueSampler{port: 1}
	at := time.Unix(1000, 0)
	for i := range 3 * maxAcceptQueueBuckets {
		s.newBucket(at.Add(time.Duration(i) * acceptQueueStep))
		s.current.Sum = uint32(i % 7)
		s.current.PerListener = []uint32{uint32(i % 5)}
	}
	s.current.Sum = 99
	q := s.result()
	if len(q.Buckets) > maxAcceptQueueBuckets {
		t.Fatalf("%d buckets, want at most %d", len(q.Buckets), maxAcceptQueueBuckets)
	}
	p, ok := q.PeakBetween(at, at.Add(time.Hour))
	if !ok || p.Sum != 99 || len(p.PerListener) != 1 || p.PerListener[0] != 4 {
		t.Errorf("peak %+v (%v), want sum 99 and listener 4", p, ok)
	}
	for i := 1; i < len(q.Buckets); i++ {
		if !q.Buckets[i].At.After(q.Buckets[i-1].At) {
			t.Fatalf("bucket %d at %v not after %v", i, q.Buckets[i].At, q.Buckets[i-1].At)
		}
	}
}

// TestAcceptQueueRefusesABadPort: the port is checked before a socket is
// opened.
func TestAcceptQueueRefusesABadPort(t *testing.T) {
	for _, port := range []int{0, -1, 70000} {
		if _, err := newAcceptQueueSampler(port); err == nil {
			t.Errorf("port %d accepted", port)
		} else if want := strconv.Itoa(port); !strings.Contains(err.Error(), want) {
			t.Errorf("port %d: %v does not name it", port, err)
		}
	}
}
