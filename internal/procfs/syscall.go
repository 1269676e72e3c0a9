package procfs

import (
	"strconv"
	"strings"
)

// Syscall is a thread's /proc/PID/task/TID/syscall: the system call it is
// blocked in and its arguments, "NR ARG1 … ARG6 SP PC" (the arguments in
// hex, 0x-prefixed). InCall is false for a running thread ("running") and
// for one not in a call ("-1 SP PC"); Nr and Args are then zero. Running
// says the file read "running": the thread was on a CPU, or woke or fell
// asleep while the kernel read it.
type Syscall struct {
	InCall  bool
	Running bool
	Nr      int
	Args    [6]uint64
}

// ParseSyscall reads a syscall file.
func ParseSyscall(b []byte) (Syscall, error) {
	const file = "syscall"
	f := strings.Fields(string(b))
	if len(f) == 1 && f[0] == "running" {
		return Syscall{Running: true}, nil
	}
	if len(f) == 0 {
		return Syscall{}, bad(file, "", "empty")
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return Syscall{}, badValue(file, "number (field 1)", err)
	}
	if nr < 0 {
		return Syscall{}, nil
	}
	if len(f) < 7 {
		return Syscall{}, bad(file, "", "%d fields, want the number and 6 arguments", len(f))
	}
	s := Syscall{InCall: true, Nr: nr}
	for i := range s.Args {
		if s.Args[i], err = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64); err != nil {
			return Syscall{}, badValue(file, "argument "+strconv.Itoa(i+1)+" (field "+strconv.Itoa(i+2)+")", err)
		}
	}
	return s, nil
}

// ReadTaskSyscall reads /proc/PID/task/TID/syscall, which needs leave to
// trace the process (fs.ErrPermission otherwise).
func ReadTaskSyscall(pid, tid int) (Syscall, error) {
	return read(TaskDir(pid, tid)+"/syscall", ParseSyscall)
}

// ParseWchan reads a wchan file: the kernel function a sleeping thread
// waits in, its compiler suffix (".constprop.0", ".isra.0") cut; "" for a
// thread not asleep, and for a reader without leave to trace it (the file
// then reads "0").
func ParseWchan(b []byte) (string, error) {
	w := strings.TrimSpace(string(b))
	if w == "0" {
		return "", nil
	}
	if strings.ContainsAny(w, " \t\n") {
		return "", bad("wchan", "", "%q is not one function name", w)
	}
	w, _, _ = strings.Cut(w, ".")
	return w, nil
}

// ReadTaskWchan reads /proc/PID/task/TID/wchan: what a thread sleeps in,
// which tells which call a restart_syscall resumes (a poll, a sleep, a
// futex wait).
func ReadTaskWchan(pid, tid int) (string, error) {
	return read(TaskDir(pid, tid)+"/wchan", ParseWchan)
}
