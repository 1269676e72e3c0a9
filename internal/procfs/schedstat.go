package procfs

import (
	"strconv"
	"strings"
)

// Schedstat is a thread's /proc/PID/task/TID/schedstat (or a process's
// /proc/PID/schedstat, which is its main thread's): the scheduler's
// account of it since it started.
type Schedstat struct {
	RunNs  int64 // nanoseconds on a CPU (field 1)
	WaitNs int64 // nanoseconds runnable, waiting on a run queue (field 2)
	Slices int64 // times put on a CPU (field 3; 0 where the line has only two)
}

// ParseSchedstat reads one schedstat line, "run-ns wait-ns timeslices":
// the first two fields must be there, the third may not be.
func ParseSchedstat(b []byte) (Schedstat, error) {
	const file = "schedstat"
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return Schedstat{}, bad(file, "", "%q: want at least 2 fields", b)
	}
	var s Schedstat
	var err error
	if s.RunNs, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return Schedstat{}, badValue(file, "run time (field 1)", err)
	}
	if s.WaitNs, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return Schedstat{}, badValue(file, "run-queue wait (field 2)", err)
	}
	if len(f) >= 3 {
		if s.Slices, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return Schedstat{}, badValue(file, "timeslices (field 3)", err)
		}
	}
	return s, nil
}

// SchedstatPath is the schedstat file of process pid (Self for the
// caller), whose absence in a process that exists says the kernel keeps
// no schedstat (CONFIG_SCHED_INFO off).
func SchedstatPath(pid int) string { return Dir(pid) + "/schedstat" }

// ReadTaskSchedstat reads /proc/PID/task/TID/schedstat: one thread's.
func ReadTaskSchedstat(pid, tid int) (Schedstat, error) {
	return read(TaskDir(pid, tid)+"/schedstat", ParseSchedstat)
}
