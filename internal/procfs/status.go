package procfs

import (
	"strconv"
	"strings"
)

// Status is a process's or thread's /proc/PID/status (or
// /proc/PID/task/TID/status), in the lines the module reads. The file is
// one "Key:\tvalue" line per item; a line the kernel adds and this does
// not know is skipped, a known one that does not parse is refused.
type Status struct {
	// RSS and PeakRSS are VmRSS and VmHWM, in bytes (the file gives kB):
	// the resident set now and at its peak, of the whole process. Kernel
	// threads have no Vm lines; they stay 0.
	RSS, PeakRSS int64
	// Threads is the process's thread count; 0 if the line is missing.
	Threads int
	// CPUList is Cpus_allowed_list, the task's CPU affinity as a list
	// ("0-3,6"); "" if the line is missing.
	CPUList string
	// VoluntarySwitches is voluntary_ctxt_switches, the times the task
	// gave up its CPU by blocking (a wait, a read with nothing to read); -1
	// if the line is missing.
	VoluntarySwitches int64
	// InvoluntarySwitches is nonvoluntary_ctxt_switches, the times the
	// task was taken off its CPU while it could still run (preempted: its
	// slice ended, or a task of higher claim woke); -1 if the line is
	// missing. A task that never blocks gives up its CPU only this way.
	InvoluntarySwitches int64
}

// ParseStatus reads a status file.
func ParseStatus(b []byte) (Status, error) {
	const file = "status"
	s := Status{VoluntarySwitches: -1, InvoluntarySwitches: -1}
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		var err error
		switch key {
		case "VmRSS", "VmHWM":
			var kb int64
			if kb, err = strconv.ParseInt(strings.TrimSuffix(val, " kB"), 10, 64); err == nil && (kb < 0 || kb >= 1<<53) {
				return Status{}, bad(file, key, "%d kB out of range", kb)
			}
			if key == "VmRSS" {
				s.RSS = kb << 10
			} else {
				s.PeakRSS = kb << 10
			}
		case "Threads":
			s.Threads, err = strconv.Atoi(val)
		case "Cpus_allowed_list":
			s.CPUList = val
		case "voluntary_ctxt_switches":
			s.VoluntarySwitches, err = strconv.ParseInt(val, 10, 64)
		case "nonvoluntary_ctxt_switches":
			s.InvoluntarySwitches, err = strconv.ParseInt(val, 10, 64)
		}
		if err != nil {
			return Status{}, badValue(file, key, err)
		}
	}
	return s, nil
}

// ReadStatus reads /proc/PID/status of process pid (Self for the caller).
func ReadStatus(pid int) (Status, error) {
	return read(Dir(pid)+"/status", ParseStatus)
}

// ReadTaskStatus reads /proc/PID/task/TID/status: one thread's (its own
// CPU mask and switches; the memory lines are the process's).
func ReadTaskStatus(pid, tid int) (Status, error) {
	return read(TaskDir(pid, tid)+"/status", ParseStatus)
}
