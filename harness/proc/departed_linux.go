//go:build linux

package proc

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/reactorlab/reactorlab/internal/procfs"
)

// member identifies one process of the group at ready time; its start
// time tells it from a later process that reuses the pid.
type member struct {
	pid     int
	start   uint64 // field 22 of /proc/<pid>/stat, in clock ticks since boot
	command string
}

// snapshotGroup lists the living members of group pgid with their start
// times and command lines. A member that exits meanwhile is left out.
func snapshotGroup(pgid int) []member {
	pids, err := groupPids(pgid)
	if err != nil {
		return nil
	}
	var out []member
	for _, pid := range pids {
		st, err := procfs.ReadStat(pid)
		if err != nil {
			continue
		}
		out = append(out, member{pid: pid, start: st.Start, command: commandLine(pid)})
	}
	return out
}

// intersectMembers keeps the members of before that are still in after
// (the same pid and start time), with after's command lines: a process
// that was being exec'd into the target is named as the target.
func intersectMembers(before, after []member) []member {
	var out []member
	for _, a := range after {
		for _, b := range before {
			if a.pid == b.pid && a.start == b.start {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// Departed lists the members of the group present when the target became
// ready that have exited since (the leader first). The leader's status is
// exact once it is reaped; another member's is read from its zombie's
// /proc entry while its parent has not reaped it, and unknown after.
func (p *Process) Departed() []Departure {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Departure
	for _, m := range p.members {
		if m.pid == p.pid {
			if p.reaped {
				out = append(out, Departure{Pid: m.pid, Command: m.command, Status: describeWait(p.state.Sys())})
			}
			continue
		}
		st, err := procfs.ReadStat(m.pid)
		switch {
		case err != nil || st.Start != m.start:
			out = append(out, Departure{Pid: m.pid, Command: m.command}) // gone, or its pid reused
		case st.Zombie():
			d := Departure{Pid: m.pid, Command: m.command}
			if st.ExitCode >= 0 { // the exit code field is there since Linux 3.5
				d.Status = describeWait(syscall.WaitStatus(st.ExitCode))
			}
			out = append(out, d)
		}
	}
	return out
}

// describeWait renders a wait status as os.ProcessState does.
func describeWait(sys any) string {
	ws, ok := sys.(syscall.WaitStatus)
	if !ok {
		return ""
	}
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		s := "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			s += " (core dumped)"
		}
		return s
	}
	return ""
}

// commandLine is /proc/<pid>/cmdline with spaces for NULs, at most 200
// bytes.
func commandLine(pid int) string {
	argv, err := procfs.ReadCmdline(pid)
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(strings.Join(argv, " "))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
