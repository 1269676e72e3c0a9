package cases

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
)

// m2Case is M2: each connection is served by one loop only: every echo
// comes back whole and in order.
func m2Case() conformance.Case {
	return conformance.Case{
		ID:      "M2",
		Title:   "one loop per connection",
		Claim:   fmt.Sprintf("%d connections each pipelining %d frames of mixed sizes (1 B to 64 KiB), half of them a frame a write and half %d, get every echo back whole and in order: two loops serving one socket interleave its reads and writes. A reference reactor also registers each connection on one loop only: the connections its loops registered (Σ per-loop conns) are no more than it accepted", m2Conns, m2Frames, m2Batch),
		Bound:   fmt.Sprintf("each echo within %v of the previous one on its connection (a frame is served within a round); the whole exchange within the case's %v. A stall through which a thread of the server (one with processes of its own) waited for a CPU %s is the machine's: the case is inconclusive when every connection that failed stalled so", echoBound, m2Timeout, m2StarvedText()),
		Setup:   conformance.Setup{Tweak: twoDataLoops},
		Timeout: m2Timeout,
		Run:     runM2,
	}
}

// m2Sizes is n payload sizes, mostly small, some up to 64 KiB (about
// 1.6 KiB on average): frames that end and begin anywhere in a read.
func m2Sizes(rng *rand.Rand, n int) []int {
	out := make([]int, n)
	for i := range out {
		switch p := rng.IntN(100); {
		case p < 90:
			out[i] = 1 + rng.IntN(1024)
		case p < 99:
			out[i] = 1024 + rng.IntN(15<<10)
		default:
			out[i] = 16<<10 + rng.IntN(48<<10+1)
		}
	}
	return out
}

// M2's load: m2Conns connections of m2Frames frames each, the even
// tokens' written m2Batch frames a write; the case ends after m2Timeout.
const (
	m2Conns   = 16
	m2Frames  = 2000
	m2Batch   = 32
	m2Timeout = 90 * time.Second
)

func runM2(c *conformance.C) {
	const conns, frames = m2Conns, m2Frames
	addr := c.Instance().Addr()
	watch := m2Watch(c)
	errs := make(chan error, conns)
	for i := range conns {
		token := uint64(i + 1)
		p := dial(c, fmt.Sprintf("conn %d", token), addr)
		sizes := m2Sizes(rand.New(rand.NewPCG(token, 18)), frames)
		// Half the connections write 32 frames at a time, half one: a
		// server whose two loops both serve a socket is caught when both
		// read it between two of its own writes, which a stream arriving
		// in small pieces makes far likelier than large ones (a C server
		// reading 64 KiB at a time: 6 of 10 runs with every connection
		// writing 32 frames at a time).
		batch := m2Batch
		if token%2 == 1 {
			batch = 1
		}
		pipeline(c, p, token, sizes, batch)
		go func() { errs <- m2Read(p, token, sizes) }()
	}
	var bad []error
	for range conns {
		if err := <-errs; err != nil {
			bad = append(bad, err)
		}
	}
	samples := watch()
	if len(bad) > 0 {
		m2Judge(c, bad, samples)
	}
	if c.Reference() == nil {
		return
	}
	f := c.Stop()
	finalStats(c, f)
	var registered uint64
	var per []string
	for _, l := range f.Stats.PerLoop {
		registered += l.Conns
		per = append(per, fmt.Sprintf("loop %d (%s) %d", l.Loop, l.Role, l.Conns))
	}
	c.Evidencef("connections registered per loop: %s; accepted %d", strings.Join(per, ", "), f.Stats.Counters.Accepts)
	if registered > f.Stats.Counters.Accepts {
		c.Fatalf("the loops registered %d connections, but only %d were accepted: a connection was registered on two loops", registered, f.Stats.Counters.Accepts)
	}
}

// m2Judge fails the case on the connections' errors, unless every one of
// them is a stall during which the machine kept the server from running
// (m2Starved): the server was not given the time to answer, which says
// nothing of it, and the case is inconclusive.
func m2Judge(c *conformance.C, bad []error, samples []m2Sample) {
	var texts []string
	allStarved, shown, shownNotStarved := true, 0, false
	for _, err := range bad {
		texts = append(texts, err.Error())
		var st *m2Stall
		if !errors.As(err, &st) {
			allStarved = false
			continue
		}
		ok, account := m2Starved(samples, st)
		// A few stalls' accounts, and the first that was not starved.
		if account != "" && (shown < 3 || !ok && !shownNotStarved) {
			shown++
			shownNotStarved = shownNotStarved || !ok
			c.Evidencef("conn %d's stall (%v from its last echo): %s", st.token, st.at.Sub(st.since).Round(time.Millisecond), account)
		}
		if !ok {
			allStarved = false
		}
	}
	if allStarved {
		c.Inconclusivef("the server was starved of CPU: %d of %d connections waited longer than %v for an echo (%s), and through each of those stalls a thread of the server waited for a CPU %s; the machine, not the server, held the echoes back", len(bad), m2Conns, echoBound, strings.Join(firstFew(texts, 4), "; "), m2StarvedText())
	}
	c.Evidencef("sent: %d connections, each %d DATA frames of 1 B to 64 KiB pipelined (odd tokens a frame a write, even ones %d)", m2Conns, m2Frames, m2Batch)
	c.Fatalf("%d of %d connections: %s", len(bad), m2Conns, strings.Join(firstFew(texts, 4), "; "))
}

// m2Stall is a connection's echo that did not come within echoBound of
// the one before (or of the start): the stall lasted from since to at.
type m2Stall struct {
	token     uint64
	seq, of   int
	since, at time.Time
}

func (s *m2Stall) Error() string {
	return fmt.Sprintf("conn %d: echo %d of %d: %v", s.token, s.seq, s.of, errNoAnswer)
}

// M2 asks the scheduler, every m2SampleEvery while the connections run,
// what each thread of a server with processes of its own ran, waited for
// a CPU (schedstat) and blocked (status). A stall is the machine's when a
// thread of the server waited for a CPU for at least m2StarvedShare of it
// and blocked less than once per m2BlockEvery on average: it had work and
// was not given the CPU to do it. A loop that blocks and wakes on a tick
// (1 ms) waits for a CPU at every wakeup on a busy machine, as long as
// its ticks add up to, while idle: that is no starvation.
const (
	m2SampleEvery  = 100 * time.Millisecond
	m2StarvedShare = 0.5
	m2BlockEvery   = 10 * time.Millisecond
)

// m2StarvedText is m2Starved's rule in words.
func m2StarvedText() string {
	return fmt.Sprintf("for at least %.0f%% of it, blocking less than once per %v on average (schedstat and status, read every %v)", 100*m2StarvedShare, m2BlockEvery, m2SampleEvery)
}

// m2Sample is the scheduler's account of the server's threads at one
// moment (nil: it could not be read), and which of them were runnable
// (state R: on a CPU, or waiting for one).
type m2Sample struct {
	at       time.Time
	threads  map[threadKey]threadAccount
	runnable map[threadKey]bool
}

// m2Watch samples, every m2SampleEvery until the returned stop is called,
// the account of each thread of the instance's processes (a process
// target's: an in-process server's threads cannot be told from the
// test's, whose clients wait for a CPU too, and it gets none). stop ends
// the sampling, takes one last sample and returns them all, oldest first.
func m2Watch(c *conformance.C) (stop func() []m2Sample) {
	g, ok := c.Instance().(conformance.ProcessGroup)
	if !ok {
		return func() []m2Sample { return nil }
	}
	take := func() m2Sample {
		s := m2Sample{at: time.Now()}
		if pids, err := g.Group(); err == nil {
			s.threads, _ = readThreads(pids)
		}
		s.runnable = map[threadKey]bool{}
		for k := range s.threads {
			if st, err := procfs.ReadTaskStat(k.pid, k.tid); err == nil && st.State == "R" {
				s.runnable[k] = true
			}
		}
		return s
	}
	var samples []m2Sample
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(m2SampleEvery)
		defer tick.Stop()
		for {
			samples = append(samples, take())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() []m2Sample {
		once.Do(func() {
			close(done)
			<-ended
			samples = append(samples, take())
		})
		return samples
	}
	c.Cleanup(func() { stop() })
	return stop
}

// m2Starved reports whether the server was starved of CPU through st:
// between the last sample taken before the stall began and the first
// after it ended, a thread of the server waited for a CPU for at least
// m2StarvedShare of that span and blocked less than once per
// m2BlockEvery. account is what the scheduler said of that thread, or of
// the one that waited longest ("" when no two samples bracket the stall:
// no account, and no starvation).
//
// The kernel adds a wait to a thread's schedstat when the wait ends (the
// thread gets a CPU): a thread still waiting has that wait in no figure
// yet. So a span between two samples in which a thread was runnable at
// both ends and neither ran nor had a wait added counts as waited too.
func m2Starved(samples []m2Sample, st *m2Stall) (starved bool, account string) {
	from, to := -1, -1
	for i, s := range samples {
		if s.threads == nil {
			continue
		}
		if !s.at.After(st.since) {
			from = i
		}
		if to < 0 && !s.at.Before(st.at) {
			to = i
		}
	}
	if from < 0 || to < 0 {
		return false, ""
	}
	spans := threadSpans(samples[from].threads, samples[to].threads)
	if len(spans) == 0 {
		return false, ""
	}
	span := samples[to].at.Sub(samples[from].at)
	for i := range spans {
		k := spans[i].threadKey
		prev := from
		for j := from + 1; j <= to; j++ {
			if samples[j].threads == nil {
				continue
			}
			a, b := samples[prev], samples[j]
			if a.runnable[k] && b.runnable[k] && a.threads[k] == b.threads[k] {
				spans[i].wait += b.at.Sub(a.at)
			}
			prev = j
		}
		spans[i].wait = min(spans[i].wait, span)
	}
	longest := spans[0]
	for _, s := range spans {
		if float64(s.wait) >= m2StarvedShare*float64(span) && time.Duration(s.voluntary)*m2BlockEvery < span {
			longest, starved = s, true
			break
		}
		if s.wait > longest.wait {
			longest = s
		}
	}
	what := "the one that waited longest for a CPU"
	if starved {
		what = "one starved"
	}
	threads := fmt.Sprintf("%d threads", len(spans))
	if len(spans) == 1 {
		threads = "1 thread"
	}
	return starved, fmt.Sprintf("over the %v around it, of the server's %s %s: %s", span.Round(time.Millisecond), threads, what, longest)
}

// pipeline writes DATA (token, seq 0..) of the given sizes on p, batch
// frames a write, in a goroutine the case waits for when it ends (a
// write blocked past 10 s, or on a closed connection, gives up).
func pipeline(c *conformance.C, p *peer, token uint64, sizes []int, batch int) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b []byte
		for seq, size := range sizes {
			b = append(b, dataFrame(token, uint64(seq), size)...)
			if seq%batch == batch-1 || seq == len(sizes)-1 {
				p.link.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := p.link.Write(b); err != nil {
					return
				}
				b = b[:0]
			}
		}
	}()
	c.Cleanup(func() { p.close(); <-done })
}

// m2Read checks p's echoes: every frame, in order, whole, each within
// echoBound of the one before. An echo that does not come in time is an
// *m2Stall.
func m2Read(p *peer, token uint64, sizes []int) error {
	last := time.Now()
	for seq, size := range sizes {
		g, err := p.next(echoBound)
		if errors.Is(err, errNoAnswer) {
			return &m2Stall{token: token, seq: seq, of: len(sizes), since: last, at: time.Now()}
		}
		if err != nil {
			return fmt.Errorf("conn %d: echo %d of %d: %v", token, seq, len(sizes), err)
		}
		last = time.Now()
		if why := checkEcho(g, token, uint64(seq), size); why != "" {
			return fmt.Errorf("conn %d: echo %d (%d B): %s", token, seq, size, why)
		}
	}
	return nil
}
