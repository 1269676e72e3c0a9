//go:build linux

package diagnose

import (
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// samplerShare bounds the sampler's cost: at most a samplerShare-th of
// one CPU (5%).
const samplerShare = 20

// timesSampler keeps the counts of every thread of a process group while
// StartTimes runs it.
type timesSampler struct {
	pids    func() ([]int, error)
	members []int                // the processes as pids last listed them
	threads map[int]*ThreadCount // tid → its counts since first seen
	tick    int
	seen    map[int]int // tid → the tick it was last seen in
	rec     ThreadTimes
	o       *observer // its cannot records what was not read
}

// StartTimes starts sampling the threads of the processes pids lists (a
// process group's members, say) and returns the function that stops it
// and returns the record. Every TimesInterval (or more: at most a
// samplerShare-th of one CPU) it reads each thread's stat and, for a
// sleeping one, its system call; every TimesStep, each thread's
// schedstat, into a snapshot, and calls pids again (listing a process
// group scans every process of the machine: once a step, not once a
// look). Nothing is signalled or traced: /proc alone. The sampler runs on
// one OS thread of its own, whose CPU time the record gives. Stopping it
// twice returns the same record.
func StartTimes(pids func() ([]int, error)) (stop func() *ThreadTimes) {
	s := &timesSampler{pids: pids, threads: map[int]*ThreadCount{}, seen: map[int]int{},
		rec: ThreadTimes{Interval: jsontime.Seconds(TimesInterval)}, o: &observer{unreadable: map[string]bool{}}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.run(done)
	}()
	var once sync.Once
	return func() *ThreadTimes {
		once.Do(func() { close(done); wg.Wait() })
		return &s.rec
	}
}

// run samples until done is closed, then takes a last snapshot. A look
// that used more CPU than a samplerShare-th of TimesInterval puts the
// next off until the sampler has used that share of one CPU at most (a
// process of thousands of threads is looked at less often, not at a
// greater cost).
func (s *timesSampler) run(done <-chan struct{}) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, start := threadCPU(), time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	lastSnap := time.Time{}
	for {
		select {
		case <-done:
			s.snapshot(time.Now())
			s.rec.SamplerCPU = jsontime.Seconds(threadCPU() - cpu0)
			s.rec.Span = jsontime.Seconds(time.Since(start))
			s.rec.Unreadable = slices.Sorted(maps.Keys(s.o.unreadable))
			return
		case <-t.C:
		}
		began, used := time.Now(), threadCPU()
		snap := began.Sub(lastSnap) >= TimesStep
		if snap {
			s.list()
		}
		s.sample()
		if snap {
			s.snapshot(time.Now())
			lastSnap = began
		}
		used = threadCPU() - used
		t.Reset(time.Until(began.Add(max(TimesInterval, used*samplerShare))))
	}
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// sample looks once at every thread of every process: running (state
// R), asleep in an event wait, in another call, or where it could not be
// read.
func (s *timesSampler) sample() {
	s.tick++
	if len(s.members) == 0 {
		return
	}
	s.rec.Samples++
	for _, pid := range s.members {
		tids, err := procfs.Tasks(pid)
		if err != nil {
			s.o.cannot("the thread list", err)
			continue
		}
		for _, tid := range tids {
			st, err := procfs.ReadTaskStat(pid, tid)
			if err != nil {
				s.o.cannot("stat", err)
				continue
			}
			if st.Zombie() {
				continue
			}
			c := s.threads[tid]
			if c == nil {
				c = &ThreadCount{Pid: pid, Tid: tid, RunNs: -1, RunqNs: -1}
				s.threads[tid] = c
			}
			c.Comm = st.Comm
			s.seen[tid] = s.tick
			c.Samples++
			if st.State == "R" {
				c.Running++
				continue
			}
			call, err := procfs.ReadTaskSyscall(pid, tid)
			if err == nil && call.Running {
				// It woke, or woke and slept again, between the two
				// reads (a loop whose rounds are short does so often):
				// one more look says where it is.
				call, err = procfs.ReadTaskSyscall(pid, tid)
			}
			switch {
			case err != nil:
				s.o.cannot("syscall (the call a thread is in)", err)
				c.Unplaced++
			case call.Running:
				// On the move still: counted among the looks that found
				// it on a CPU, which leave the sleep's split alone.
				c.Running++
			case !call.InCall:
				// Asleep outside any system call: a page fault.
				if c.InCall == nil {
					c.InCall = map[string]int{}
				}
				c.InCall[OutsideCall]++
			default:
				if _, ok, name := s.o.which(pid, tid, call); ok {
					c.InWait++
				} else {
					if c.InCall == nil {
						c.InCall = map[string]int{}
					}
					c.InCall[name]++
				}
			}
		}
	}
}

// list lists the processes again; a failure keeps the last list, and the
// first is the record's Error.
func (s *timesSampler) list() {
	pids, err := s.pids()
	if err != nil {
		if s.rec.Error == "" {
			s.rec.Error = "listing the processes: " + err.Error()
		}
		return
	}
	s.members = pids
}

// snapshot reads the schedstat of every thread seen in the last sample
// and appends their counts at now; none when no thread was seen (the
// processes have ended), so a record ends where they did.
func (s *timesSampler) snapshot(now time.Time) {
	snap := TimesSnapshot{At: now}
	for _, tid := range slices.Sorted(maps.Keys(s.threads)) {
		c := s.threads[tid]
		if s.seen[tid] != s.tick {
			delete(s.threads, tid)
			delete(s.seen, tid)
			continue
		}
		c.RunNs, c.RunqNs = -1, -1
		if st, err := procfs.ReadTaskSchedstat(c.Pid, tid); err == nil {
			c.RunNs, c.RunqNs = st.RunNs, st.WaitNs
		} else {
			s.o.cannot("schedstat (time on and waiting for a CPU)", err)
		}
		cc := *c
		cc.InCall = maps.Clone(c.InCall)
		snap.Threads = append(snap.Threads, cc)
	}
	if len(snap.Threads) == 0 {
		return
	}
	s.rec.thin()
	s.rec.Snapshots = append(s.rec.Snapshots, snap)
}
