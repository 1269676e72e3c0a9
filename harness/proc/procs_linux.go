//go:build linux

package proc

import (
	"strconv"

	"github.com/reactorlab/reactorlab/internal/procfs"
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
	pids, err := procfs.Pids()
	if err != nil {
		return nil, err
	}
	var out []ProcStat
	for _, pid := range pids {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			continue // gone meanwhile, or unreadable
		}
		out = append(out, ProcStat{Pid: pid, PPid: st.PPid, Pgrp: st.Pgrp, Comm: st.Comm, State: st.State, Start: strconv.FormatUint(st.Start, 10)})
	}
	return out, nil
}
