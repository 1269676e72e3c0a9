//go:build linux

package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ProcStat is one process as its /proc/PID/stat shows it.
type ProcStat struct {
	Pid, PPid, Pgrp int
	Comm            string // the command name, without its parentheses
	State           string // R, S, D, T, Z (zombie), X (dead), ...
	Start           string // start time in clock ticks since boot: with Pid, a name no other process will have
}

// Living reports whether the process is neither a zombie nor dead.
func (p ProcStat) Living() bool { return p.State != "Z" && p.State != "X" }

// Processes lists the processes /proc shows, in directory order. A process
// that exits while it reads, or whose stat it cannot parse, is left out.
func Processes() ([]ProcStat, error) {
	names, err := readNames("/proc")
	if err != nil {
		return nil, err
	}
	var out []ProcStat
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if p, ok := parseProcStat(pid, b); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// parseProcStat reads pid's stat line b: "pid (comm) state ppid pgrp ...",
// the start time the 22nd field. The command name may hold spaces and
// parentheses, so it is what lies between the first '(' and the last ')'.
func parseProcStat(pid int, b []byte) (ProcStat, bool) {
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return ProcStat{}, false
	}
	f := strings.Fields(string(b[j+1:])) // state, ppid, pgrp, ...; starttime is f[19]
	if len(f) < 20 {
		return ProcStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return ProcStat{}, false
	}
	return ProcStat{Pid: pid, PPid: ppid, Pgrp: pgrp, Comm: string(b[i+1 : j]), State: f[0], Start: f[19]}, true
}
