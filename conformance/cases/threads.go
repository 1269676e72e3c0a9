package cases

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/reactorlab/reactorlab/internal/procfs"
)

// threadKey names one thread of a server's process group.
type threadKey struct{ pid, tid int }

// threadAccount is the scheduler's account of one thread: its time on a
// CPU and its time runnable but waiting for one (schedstat), and how
// often it gave up its CPU by blocking (voluntary) or was taken off it
// while it could still run (involuntary), from status.
type threadAccount struct {
	run, wait              time.Duration
	voluntary, involuntary int64
}

// readThreads reads the account of every thread of pids. A thread that
// ends while it is read is left out; the error says that no thread at all
// could be read (the kernel keeps no schedstat, or the status file has no
// context-switch lines), so that no figure of it can be judged.
func readThreads(pids []int) (map[threadKey]threadAccount, error) {
	out := map[threadKey]threadAccount{}
	var firstErr error
	for _, pid := range pids {
		tids, err := procfs.Tasks(pid)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		for _, tid := range tids {
			s, err := procfs.ReadTaskSchedstat(pid, tid)
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			st, err := procfs.ReadTaskStatus(pid, tid)
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			if st.VoluntarySwitches < 0 || st.InvoluntarySwitches < 0 {
				firstErr = cmp.Or(firstErr, fmt.Errorf("%s/status has no voluntary_ctxt_switches or nonvoluntary_ctxt_switches line", procfs.TaskDir(pid, tid)))
				continue
			}
			out[threadKey{pid, tid}] = threadAccount{
				run: time.Duration(s.RunNs), wait: time.Duration(s.WaitNs),
				voluntary: st.VoluntarySwitches, involuntary: st.InvoluntarySwitches,
			}
		}
	}
	if len(out) == 0 {
		if firstErr == nil {
			firstErr = fmt.Errorf("no thread in processes %v", pids)
		}
		return nil, firstErr
	}
	return out, nil
}

// threadSpan is one thread's account over a window: the difference of
// two readings (a thread born within the window counts from zero; one
// that ended within it is not there).
type threadSpan struct {
	threadKey
	threadAccount
}

// asked is how long the thread wanted a CPU over the span: ran plus
// waited for one.
func (s threadSpan) asked() time.Duration { return s.run + s.wait }

func (s threadSpan) String() string {
	return fmt.Sprintf("thread %d of pid %d ran %v and waited %v for a CPU, blocked %d times and was preempted %d times",
		s.tid, s.pid, s.run.Round(time.Millisecond), s.wait.Round(time.Millisecond), s.voluntary, s.involuntary)
}

// threadSpans is every thread of after, less its account in before, the
// one that asked for the most CPU first.
func threadSpans(before, after map[threadKey]threadAccount) []threadSpan {
	out := make([]threadSpan, 0, len(after))
	for k, a := range after {
		b := before[k]
		out = append(out, threadSpan{k, threadAccount{
			run: a.run - b.run, wait: a.wait - b.wait,
			voluntary: a.voluntary - b.voluntary, involuntary: a.involuntary - b.involuntary,
		}})
	}
	slices.SortFunc(out, func(x, y threadSpan) int {
		return cmp.Or(cmp.Compare(y.asked(), x.asked()), cmp.Compare(x.pid, y.pid), cmp.Compare(x.tid, y.tid))
	})
	return out
}
