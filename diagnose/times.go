package diagnose

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
)

// The bounds of a time account's sampling (StartTimes).
const (
	// TimesInterval is the time between two looks at every thread's
	// state and system call (or more: the sampler takes at most a
	// twentieth of one CPU): twice diagnose's own (DefaultInterval), which
	// halves the sampler's cost (measured: 2-3% of one CPU at 10 ms for a
	// process of six threads) and still gives 50 samples a second of the
	// window to split its sleep between the event wait and other calls.
	TimesInterval = 2 * DefaultInterval
	// TimesStep is the time between two snapshots of the cumulative
	// counts: a window taken from a run's record starts and ends within a
	// step of the period asked for (the lab's own samples are as far
	// apart: lab.DefaultSampleEvery).
	TimesStep = 100 * time.Millisecond
	// maxSnapshots bounds a record (about 1 KB a snapshot for a process
	// of eight threads): past it every second snapshot is dropped, so a
	// run longer than 25 s keeps an even spread at a coarser step.
	maxSnapshots = 256
)

// OutsideCall is the name ThreadCount.InCall and ThreadShares.BlockedIn
// give the sleep of a thread in no system call: a page fault (a binary's
// pages read from a busy disk, say).
const OutsideCall = "no system call (a page fault)"

// ThreadCount is one thread's cumulative counts at a snapshot: its
// schedstat times since the thread began (RunNs on a CPU, RunqNs runnable
// waiting for one; -1 when unread), and, since the sampler first saw it,
// its samples and where they found it: Running in state R (on or waiting
// for a CPU), InWait asleep in an event wait, InCall asleep in another
// system call (by name; OutsideCall in none), Unplaced asleep where its
// system call could not be read.
type ThreadCount struct {
	Pid      int            `json:"pid"`
	Tid      int            `json:"tid"`
	Comm     string         `json:"comm"`
	RunNs    int64          `json:"run_ns"`
	RunqNs   int64          `json:"runq_ns"`
	Samples  int            `json:"samples"`
	Running  int            `json:"running"`
	InWait   int            `json:"in_wait"`
	InCall   map[string]int `json:"in_call,omitempty"`
	Unplaced int            `json:"unplaced,omitempty"`
}

// TimesSnapshot is every thread's cumulative counts at one instant, in
// tid order.
type TimesSnapshot struct {
	At      time.Time     `json:"at"`
	Threads []ThreadCount `json:"threads"`
}

// ThreadTimes is a sampler's record of a process group's threads: its
// snapshots in time order (at most maxSnapshots, a step apart or more),
// Samples the looks it took (one each Interval, each at every thread),
// what it could not read (Unreadable, each kind once, with why; Error the
// first failure to list the processes), and what the sampling cost:
// SamplerCPU is the CPU time the sampler's own thread used over Span, the
// time it ran.
type ThreadTimes struct {
	Interval   jsontime.Seconds `json:"interval_s"`
	Snapshots  []TimesSnapshot  `json:"snapshots"`
	Samples    int              `json:"samples"`
	SamplerCPU jsontime.Seconds `json:"sampler_cpu_s"`
	Span       jsontime.Seconds `json:"span_s"`
	Unreadable []string         `json:"unreadable,omitempty"`
	Error      string           `json:"error,omitempty"`
}

// ThreadShares is one thread's (or a sum of threads') time over a window,
// each figure a fraction of the window: Waiting asleep in an event wait,
// Serving on a CPU, Blocked asleep in another system call (BlockedIn by
// call, the calls' shares summing to Blocked), Runnable waiting for a CPU,
// and Unplaced asleep where the system call could not be read. For one
// thread alive through the window they sum to 1 within the sampling's
// error (the split of the sleep between wait and call is by samples;
// Serving and Runnable are the scheduler's exact times). Serving and
// Runnable are -1 when schedstat could not be read: Waiting, Blocked and
// Unplaced are then shares of the samples, and Running the share found
// on or waiting for a CPU.
type ThreadShares struct {
	Pid       int                `json:"pid,omitempty"`
	Tid       int                `json:"tid,omitempty"`
	Comm      string             `json:"comm,omitempty"`
	Waiting   float64            `json:"waiting_fraction"`
	Serving   float64            `json:"serving_fraction"`
	Blocked   float64            `json:"blocked_fraction"`
	BlockedIn map[string]float64 `json:"blocked_in_fraction,omitempty"`
	Runnable  float64            `json:"runnable_fraction"`
	Unplaced  float64            `json:"unplaced_fraction,omitempty"`
	Running   float64            `json:"running_fraction,omitempty"`
	Samples   int                `json:"samples"`
}

// LoopTimes is a process group's thread time over a window (Window
// long, looked at every Interval; Samples is the most looks at one
// thread): per loop thread (Method's rule: seen in an event wait at
// least once, or on a CPU at least a tenth of the window) its
// ThreadShares, and the other threads' summed (each a fraction of the
// window, so the sum of N threads reaches N). Started counts the threads
// first seen within the window and Ended those gone by its end: neither
// is in the figures.
type LoopTimes struct {
	Window     jsontime.Seconds `json:"window_s"`
	Interval   jsontime.Seconds `json:"interval_s"`
	Samples    int              `json:"samples"`
	Loops      []ThreadShares   `json:"loop_threads"`
	Others     ThreadShares     `json:"other_threads"`
	OtherCount int              `json:"other_thread_count"`
	Started    int              `json:"started_threads,omitempty"`
	Ended      int              `json:"ended_threads,omitempty"`
	// SamplerCPU is the sampler's own CPU time over its whole span as a
	// fraction of one CPU.
	SamplerCPU float64  `json:"sampler_cpu_fraction"`
	Unreadable []string `json:"unreadable,omitempty"`
}

// Window is the record's figures between the first snapshot at or after
// from and the last at or before to. The error says why there are none:
// no record, a sampler that failed, or fewer than two snapshots inside.
func (r *ThreadTimes) Window(from, to time.Time) (*LoopTimes, error) {
	if r == nil {
		return nil, fmt.Errorf("no thread times recorded")
	}
	if r.Error != "" && len(r.Snapshots) < 2 {
		return nil, fmt.Errorf("thread times: %s", r.Error)
	}
	lo, hi := -1, -1
	for i, s := range r.Snapshots {
		if lo < 0 && !s.At.Before(from) {
			lo = i
		}
		if !s.At.After(to) {
			hi = i
		}
	}
	if lo < 0 || hi <= lo {
		return nil, fmt.Errorf("thread times: fewer than two of %d snapshots within the window", len(r.Snapshots))
	}
	lt := Between(r.Snapshots[lo], r.Snapshots[hi])
	lt.Interval = r.Interval
	if r.Span > 0 {
		lt.SamplerCPU = float64(r.SamplerCPU) / float64(r.Span)
	}
	lt.Unreadable = r.Unreadable
	return lt, nil
}

// Between is the thread time from snapshot a to snapshot b (b later):
// each thread's counts at b less those at a, its loop threads by
// Method's rule, the others summed.
func Between(a, b TimesSnapshot) *LoopTimes {
	window := b.At.Sub(a.At)
	lt := &LoopTimes{Window: jsontime.Seconds(window)}
	first := map[int]ThreadCount{}
	for _, t := range a.Threads {
		first[t.Tid] = t
	}
	seen := map[int]bool{}
	for _, t := range b.Threads {
		seen[t.Tid] = true
		f, ok := first[t.Tid]
		if !ok {
			lt.Started++
			continue
		}
		s := shares(f, t, window)
		lt.Samples = max(lt.Samples, s.Samples)
		loop := s.waitSamples > 0 || s.Serving >= 0 && s.Serving*100 >= loopCPUShare
		if loop {
			lt.Loops = append(lt.Loops, s.ThreadShares)
			continue
		}
		lt.OtherCount++
		lt.Others.add(s.ThreadShares)
	}
	for _, t := range a.Threads {
		if !seen[t.Tid] {
			lt.Ended++
		}
	}
	return lt
}

// counted is a thread's shares and the wait samples that made it a loop
// thread or not.
type counted struct {
	ThreadShares
	waitSamples int
}

// shares is one thread's ThreadShares from its counts f (window start)
// to t (window end).
func shares(f, t ThreadCount, window time.Duration) counted {
	s := counted{ThreadShares: ThreadShares{Pid: t.Pid, Tid: t.Tid, Comm: t.Comm, Samples: t.Samples - f.Samples}}
	inWait, running, unplaced := t.InWait-f.InWait, t.Running-f.Running, t.Unplaced-f.Unplaced
	s.waitSamples = inWait
	calls := map[string]int{}
	inCalls := 0
	for c, n := range t.InCall {
		if d := n - f.InCall[c]; d > 0 {
			calls[c] = d
			inCalls += d
		}
	}
	asleep := inWait + inCalls + unplaced
	// Sleep is what the scheduler's times leave of the window; without
	// them, the samples' shares stand for the times.
	var sleep float64
	if f.RunNs >= 0 && t.RunNs >= 0 && window > 0 {
		s.Serving = float64(t.RunNs-f.RunNs) / float64(window)
		s.Runnable = float64(t.RunqNs-f.RunqNs) / float64(window)
		sleep = max(0, 1-s.Serving-s.Runnable)
		if asleep == 0 {
			s.Unplaced = sleep
			return s
		}
	} else {
		s.Serving, s.Runnable = -1, -1
		if s.Samples <= 0 {
			return s
		}
		s.Running = float64(running) / float64(s.Samples)
		sleep = float64(asleep) / float64(s.Samples)
		if asleep == 0 {
			return s
		}
	}
	part := func(n int) float64 { return sleep * float64(n) / float64(asleep) }
	s.Waiting, s.Unplaced = part(inWait), part(unplaced)
	for _, c := range slices.Sorted(maps.Keys(calls)) {
		if s.BlockedIn == nil {
			s.BlockedIn = map[string]float64{}
		}
		s.BlockedIn[c] = part(calls[c])
		s.Blocked += s.BlockedIn[c]
	}
	return s
}

// add adds o's figures to s's (an unknown figure, -1, stays unknown).
func (s *ThreadShares) add(o ThreadShares) {
	s.Waiting += o.Waiting
	s.Blocked += o.Blocked
	s.Unplaced += o.Unplaced
	s.Running += o.Running
	s.Samples += o.Samples
	for c, v := range o.BlockedIn {
		if s.BlockedIn == nil {
			s.BlockedIn = map[string]float64{}
		}
		s.BlockedIn[c] += v
	}
	for _, f := range []struct {
		dst *float64
		v   float64
	}{{&s.Serving, o.Serving}, {&s.Runnable, o.Runnable}} {
		if *f.dst < 0 || f.v < 0 {
			*f.dst = -1
		} else {
			*f.dst += f.v
		}
	}
}

// TopBlocked is the call that held the thread most and its share of the
// window ("" when it was held in none).
func (s ThreadShares) TopBlocked() (string, float64) {
	top, most := "", 0.0
	for _, c := range slices.Sorted(maps.Keys(s.BlockedIn)) {
		if v := s.BlockedIn[c]; v > most {
			top, most = c, v
		}
	}
	return top, most
}

// thin drops every second snapshot once the record holds maxSnapshots,
// keeping the first.
func (r *ThreadTimes) thin() {
	if len(r.Snapshots) < maxSnapshots {
		return
	}
	kept := r.Snapshots[:0]
	for i := 0; i < len(r.Snapshots); i += 2 {
		kept = append(kept, r.Snapshots[i])
	}
	r.Snapshots = kept
}
