package procfs

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Stat is a process's or thread's /proc/PID/stat (or
// /proc/PID/task/TID/stat) line, in the fields the module reads. The line
// is "pid (comm) state ppid pgrp … utime stime … starttime … exit_code",
// fields numbered from 1 as proc(5) numbers them.
type Stat struct {
	Pid  int    // field 1
	Comm string // field 2, without its parentheses; it may hold spaces and parentheses
	// State is field 3: R, S, D, T, t, Z (zombie), X (dead), I, ….
	State string
	PPid  int // field 4, the parent
	Pgrp  int // field 5, the process group
	// UTime and STime are fields 14 and 15: the CPU time spent in user
	// and in kernel mode, in clock ticks (USER_HZ), the exited threads'
	// included.
	UTime, STime int64
	// Start is field 22: the start time in clock ticks since boot; with
	// Pid, a name no other process will have.
	Start uint64
	// ExitCode is field 52, the exit status in waitpid's form, which the
	// kernel fills in once the task has exited (a zombie's); -1 where the
	// line has no such field (before Linux 3.5).
	ExitCode int
}

// Zombie reports whether the task has exited: state Z (not yet reaped) or
// X (dead).
func (s Stat) Zombie() bool { return s.State == "Z" || s.State == "X" }

// ParseStat reads a stat line. The command name may hold spaces and
// parentheses, so it is what lies between the first '(' and the last ')',
// and the other fields are counted from that last ')'. The line must run at
// least to field 22 (every kernel's does); a field that is not a number is
// refused.
func ParseStat(b []byte) (Stat, error) {
	const file = "stat"
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if j < 0 {
		return Stat{}, bad(file, "comm (field 2)", "no ')' after the command name")
	}
	if i < 0 || i > j {
		return Stat{}, bad(file, "comm (field 2)", "no '(' before the command name")
	}
	var s Stat
	var err error
	if s.Pid, err = strconv.Atoi(strings.TrimSpace(string(b[:i]))); err != nil {
		return Stat{}, badValue(file, "pid (field 1)", err)
	}
	s.Comm = string(b[i+1 : j])
	f := strings.Fields(string(b[j+1:])) // f[n-3] is field n
	if len(f) < 20 {
		return Stat{}, bad(file, "", "%d fields after the command name, want at least 20 (to starttime, field 22)", len(f))
	}
	s.State = f[0]
	ints := []struct {
		n    int
		name string
		v    *int
	}{{4, "ppid", &s.PPid}, {5, "pgrp", &s.Pgrp}}
	for _, x := range ints {
		if *x.v, err = strconv.Atoi(f[x.n-3]); err != nil {
			return Stat{}, badValue(file, x.name+" (field "+strconv.Itoa(x.n)+")", err)
		}
	}
	if s.UTime, err = strconv.ParseInt(f[14-3], 10, 64); err != nil {
		return Stat{}, badValue(file, "utime (field 14)", err)
	}
	if s.STime, err = strconv.ParseInt(f[15-3], 10, 64); err != nil {
		return Stat{}, badValue(file, "stime (field 15)", err)
	}
	if s.Start, err = strconv.ParseUint(f[22-3], 10, 64); err != nil {
		return Stat{}, badValue(file, "starttime (field 22)", err)
	}
	s.ExitCode = -1
	if len(f) >= 52-2 {
		if s.ExitCode, err = strconv.Atoi(f[52-3]); err != nil {
			return Stat{}, badValue(file, "exit_code (field 52)", err)
		}
	}
	return s, nil
}

// ReadStat reads /proc/PID/stat of process pid (Self for the caller).
func ReadStat(pid int) (Stat, error) {
	return read(Dir(pid)+"/stat", ParseStat)
}

// ReadTaskStat reads /proc/PID/task/TID/stat: one thread's.
func ReadTaskStat(pid, tid int) (Stat, error) {
	return read(TaskDir(pid, tid)+"/stat", ParseStat)
}

// Pids lists the processes /proc shows (its numeric entries), in directory
// order; a process may end at any moment after.
func Pids() ([]int, error) {
	return numbered("/proc")
}

// Tasks lists the threads of process pid (its /proc/PID/task entries), in
// directory order; a thread may end at any moment after.
func Tasks(pid int) ([]int, error) {
	return numbered(Dir(pid) + "/task")
}

// numbered lists the entries of dir that are decimal numbers, without
// sorting them; other names are left out.
func numbered(dir string) ([]int, error) {
	names, err := readNames(dir)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(names))
	for _, n := range names {
		if v, err := strconv.Atoi(n); err == nil && v >= 0 {
			out = append(out, v)
		}
	}
	return out, nil
}

// readNames lists a directory without sorting it.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
