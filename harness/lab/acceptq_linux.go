//go:build linux

package lab

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/inetdiag"
)

// AcceptQueueEvery is how often the lab samples the server's listen
// queues: often enough to see a burst of connections wait (a burst of 16
// is accepted within a few hundred microseconds by a loop that is awake,
// and waits as long as the loops are busy), rarely enough to cost the lab
// little (two inet_diag round trips a sample, tens of microseconds).
const AcceptQueueEvery = 5 * time.Millisecond

// acceptQueueStep is the span of one AcceptQueue bucket, and
// maxAcceptQueueBuckets bounds their number: past it neighbours are merged
// (their maxima kept), so a long run keeps its peak at a coarser step.
const (
	acceptQueueStep       = 100 * time.Millisecond
	maxAcceptQueueBuckets = 512
)

// AcceptQueue is the lab's record of the server's listen queues on its data
// port: the connections the kernel has accepted (handshake complete) that
// the server has not yet taken with accept(2), what `ss -lnt` shows as a
// listener's Recv-Q. The lab reads them with inet_diag (sock_diag(7)) in
// the server's network namespace every Every, summed over every listener
// on the port (a reuseport server has one per loop), and keeps, per span
// of about 100 ms, the largest sum and each listener's largest queue.
//
// A sampled peak is a lower bound of the true peak: a queue that filled
// and drained between two samples is not seen. With a 5 ms step a burst
// that waits less than that may be missed or seen part-drained.
//
// Invariants: Buckets are in time order, each Sum at least the largest
// single PerListener entry and at most their sum (the sum of one sample,
// whose listeners peaked in different samples); len(PerListener) <=
// Listeners; Samples counts the readings that succeeded, Failed the
// others (Error has the first).
type AcceptQueue struct {
	Port      int     `json:"port"`
	EveryMs   float64 `json:"every_ms"`
	Samples   int     `json:"samples"`
	Failed    int     `json:"failed,omitempty"`
	Error     string  `json:"error,omitempty"`
	Listeners int     `json:"listeners"`
	// Backlog is the listen backlog of the port's first listener as the
	// kernel holds it (inet_diag's wqueue for a listener: min(backlog,
	// somaxconn)).
	Backlog uint32              `json:"backlog"`
	Buckets []AcceptQueueBucket `json:"buckets,omitempty"`
}

// AcceptQueueBucket is the samples of one span of an AcceptQueue: from At
// for StepMs, Sum the largest total over the listeners in one sample,
// PerListener each listener's largest queue (listeners in the order
// first seen).
type AcceptQueueBucket struct {
	At          time.Time `json:"at"`
	StepMs      float64   `json:"step_ms"`
	Sum         uint32    `json:"sum"`
	PerListener []uint32  `json:"per_listener"`
}

// AcceptQueuePeak is an AcceptQueue's peak over a period: Sum the
// largest total seen in one sample, PerListener each listener's largest,
// over Buckets spans that lie inside the period (a sampled peak: a lower
// bound).
type AcceptQueuePeak struct {
	Sum         uint32   `json:"sum"`
	PerListener []uint32 `json:"per_listener"`
	Buckets     int      `json:"buckets"`
}

// PeakBetween is the peak of q over the buckets that lie wholly inside
// [from, to]; false when none does.
func (q *AcceptQueue) PeakBetween(from, to time.Time) (AcceptQueuePeak, bool) {
	var p AcceptQueuePeak
	for _, b := range q.Buckets {
		end := b.At.Add(time.Duration(b.StepMs * float64(time.Millisecond)))
		if b.At.Before(from) || end.After(to) {
			continue
		}
		p.Buckets++
		p.Sum = max(p.Sum, b.Sum)
		p.PerListener = maxInto(p.PerListener, b.PerListener)
	}
	return p, p.Buckets > 0
}

// maxInto raises dst's entries to src's, growing dst to src's length.
func maxInto(dst, src []uint32) []uint32 {
	for len(dst) < len(src) {
		dst = append(dst, 0)
	}
	for i, v := range src {
		dst[i] = max(dst[i], v)
	}
	return dst
}

// acceptQueueSampler samples the listen queues on one port through an
// inet_diag socket opened in the network namespace whose listeners it
// reads (the namespace of the thread that opened it).
type acceptQueueSampler struct {
	fd   int
	port int

	mu      sync.Mutex // guards q and inodes while run samples
	q       AcceptQueue
	inodes  []uint32 // listener inodes in the order first seen
	current *AcceptQueueBucket
}

// newAcceptQueueSampler opens the sampler of port's listen queues in the
// calling thread's network namespace. Close it.
func newAcceptQueueSampler(port int) (*acceptQueueSampler, error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("accept queue: port %d out of range 1..65535", port)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("accept queue: inet_diag socket: %w", err)
	}
	// A reading never waits long: the kernel answers a dump at once.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("accept queue: SO_RCVTIMEO: %w", err)
	}
	return &acceptQueueSampler{fd: fd, port: port, q: AcceptQueue{Port: port}}, nil
}

// Close releases the inet_diag socket.
func (s *acceptQueueSampler) Close() error { return unix.Close(s.fd) }

// run samples every period until stop is closed.
func (s *acceptQueueSampler) run(every time.Duration, stop <-chan struct{}) {
	s.mu.Lock()
	s.q.EveryMs = float64(every) / float64(time.Millisecond)
	s.mu.Unlock()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// listenQueue is one listener's reading: its inode, its accept queue and
// its backlog.
type listenQueue struct {
	inode, queued, backlog uint32
}

// sample takes one reading of every listener on the port and folds it
// into the current bucket.
func (s *acceptQueueSampler) sample() {
	at := time.Now()
	var qs []listenQueue
	err := s.read(unix.AF_INET, &qs)
	if err == nil {
		err = s.read(unix.AF_INET6, &qs)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.q.Failed++
		if s.q.Error == "" {
			s.q.Error = err.Error()
		}
		return
	}
	s.q.Samples++
	if s.current == nil || at.Sub(s.current.At) >= acceptQueueStep {
		s.newBucket(at)
	}
	var sum uint32
	for _, l := range qs {
		i := slices.Index(s.inodes, l.inode)
		if i < 0 {
			i = len(s.inodes)
			s.inodes = append(s.inodes, l.inode)
			if i == 0 {
				s.q.Backlog = l.backlog
			}
		}
		for len(s.current.PerListener) <= i {
			s.current.PerListener = append(s.current.PerListener, 0)
		}
		s.current.PerListener[i] = max(s.current.PerListener[i], l.queued)
		sum += l.queued
	}
	s.current.Sum = max(s.current.Sum, sum)
	s.q.Listeners = max(s.q.Listeners, len(qs))
}

// newBucket starts a bucket at at, merging neighbours first when there are
// maxAcceptQueueBuckets.
func (s *acceptQueueSampler) newBucket(at time.Time) {
	if len(s.q.Buckets) >= maxAcceptQueueBuckets {
		kept := s.q.Buckets[:0]
		for i := 0; i < len(s.q.Buckets); i += 2 {
			b := s.q.Buckets[i]
			if i+1 < len(s.q.Buckets) {
				n := s.q.Buckets[i+1]
				b.StepMs = float64(n.At.Sub(b.At))/float64(time.Millisecond) + n.StepMs
				b.Sum = max(b.Sum, n.Sum)
				b.PerListener = maxInto(b.PerListener, n.PerListener)
			}
			kept = append(kept, b)
		}
		s.q.Buckets = kept
	}
	s.q.Buckets = append(s.q.Buckets, AcceptQueueBucket{At: at, StepMs: float64(acceptQueueStep) / float64(time.Millisecond)})
	s.current = &s.q.Buckets[len(s.q.Buckets)-1]
}

// result is the record so far (a copy).
func (s *acceptQueueSampler) result() *AcceptQueue {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.q
	q.Buckets = slices.Clone(s.q.Buckets)
	for i := range q.Buckets {
		q.Buckets[i].PerListener = slices.Clone(q.Buckets[i].PerListener)
	}
	return &q
}

// read dumps the listening TCP sockets of family on the port
// (inetdiag.DumpOn, on the sampler's socket in the server's namespace) and
// appends them to qs: a listener's unread queue is its accept queue, its
// unsent its backlog.
func (s *acceptQueueSampler) read(family uint8, qs *[]listenQueue) error {
	socks, err := inetdiag.DumpOn(s.fd, family, 1<<inetdiag.Listen, uint16(s.port), 0)
	if err != nil {
		return fmt.Errorf("accept queue: %w", err)
	}
	for _, l := range socks {
		if int(l.Local.Port()) == s.port {
			*qs = append(*qs, listenQueue{inode: l.Inode, queued: l.Unread, backlog: l.Unsent})
		}
	}
	return nil
}

// startAcceptQueue starts sampling, every AcceptQueueEvery, the listen
// queues on addr's port in the network namespace of w (the server's
// worker: its thread is in the server's namespace, where the inet_diag
// socket is opened, and which the socket then reads from any thread).
// stop ends the sampling and returns the record; one the lab could not
// take says why in its Error, with no samples.
func startAcceptQueue(w *worker, addr string) (stop func() *AcceptQueue) {
	_, portText, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil {
		return func() *AcceptQueue {
			return &AcceptQueue{Error: fmt.Sprintf("accept queue: data address %q has no port", addr)}
		}
	}
	var s *acceptQueueSampler
	if err := w.do(func() (err error) { s, err = newAcceptQueueSampler(port); return err }); err != nil {
		return func() *AcceptQueue { return &AcceptQueue{Port: port, Error: err.Error()} }
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		s.run(AcceptQueueEvery, done)
	}()
	return func() *AcceptQueue {
		close(done)
		<-finished
		q := s.result()
		if err := s.Close(); err != nil && q.Error == "" {
			q.Error = "accept queue: " + err.Error()
		}
		return q
	}
}
