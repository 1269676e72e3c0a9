//go:build linux

package harness

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// DefaultLoadLoops is the number of event loops the load generator runs
// when the cell leaves Load.Loops at 0: one per CPU of its set (client),
// at most one per connection; 1 when it is unpinned.
func DefaultLoadLoops(load loadgen.Config, client CPUSet) int {
	c := load.WithDefaults()
	return max(1, min(client.Len(), c.Hot+c.Steady+c.Control))
}

// place resolves the cell's placement against the CPUs this process may
// use (CPUs.Resolve) and fills in what follows from it: a reference
// reactor's loop CPUs (its side's set, unless Config.LoopCPUs already
// names CPUs of it), the load generator's loop CPUs (its side's set) and
// loops (DefaultLoadLoops when 0). A Config.LoopCPUs outside the server's
// set is refused, naming the CPU.
func (cell CellSpec) place() (CellSpec, error) {
	cpus, err := resolveCPUs(cell.CPUs)
	if err != nil {
		return cell, err
	}
	cell.CPUs = cpus
	if cell.Reactor != "" && cpus.Server.Pinned() {
		for _, c := range cell.Config.LoopCPUs {
			if !cpus.Server.Contains(c) {
				return cell, fmt.Errorf("reactor %s: loop-cpus %s: CPU %d is not in the server's set %s", cell.Reactor, reactors.FormatCPUList(cell.Config.LoopCPUs), c, cpus.Server)
			}
		}
		if len(cell.Config.LoopCPUs) == 0 {
			cell.Config.LoopCPUs = cpus.Server.List()
		}
	}
	if cell.Load.Loops == 0 {
		cell.Load.Loops = DefaultLoadLoops(cell.Load, cpus.Client)
	}
	if len(cell.Load.LoopCPUs) == 0 {
		cell.Load.LoopCPUs = cpus.Client.List()
	}
	return cell, nil
}

// loopPin is one loop thread as its process reported it: the thread and
// the CPU it pinned itself to (-1: none).
type loopPin struct {
	Index, Tid, CPU int
}

// checkPlacement holds each side's threads, as sampled (ProcResult.Masks),
// to the loop threads the side reported: a reference reactor's
// Stats.LoopThreads, the load generator's Summary.Loops. On a pinned side
// each reported loop thread must end on its CPU (having been, before it
// pinned itself, only on the side's set) and every other thread must have
// stayed on the set; each problem is added to Invalid, naming the thread
// and both masks.
func (res *CellResult) checkPlacement() {
	if lab := res.Lab; lab != nil && lab.Server != nil && res.Server != nil {
		var pins []loopPin
		for i, l := range res.Server.LoopThreads {
			pins = append(pins, loopPin{Index: i, Tid: l.Tid, CPU: l.CPU})
		}
		res.Invalid = append(res.Invalid, loopProblems("server", lab.Server, pins)...)
	}
	if lab := res.Lab; lab != nil && lab.Client != nil && res.Load != nil {
		var pins []loopPin
		for _, l := range res.Load.Loops {
			pins = append(pins, loopPin{Index: l.Index, Tid: l.Tid, CPU: l.CPU})
		}
		res.Invalid = append(res.Invalid, loopProblems("loadgen", lab.Client, pins)...)
	}
}

// loopProblems is checkPlacement for one side.
func loopProblems(name string, p *ProcResult, pins []loopPin) []string {
	if !p.CPUs.Pinned() {
		return nil
	}
	set := p.CPUs.String()
	var out []string
	bad := func(format string, a ...any) {
		out = append(out, fmt.Sprintf("placement: %s: ", name)+fmt.Sprintf(format, a...))
	}
	want := map[int]string{} // tid → the mask it must end on
	what := map[int]string{} // tid → what the thread is, for the message
	for _, l := range pins {
		switch {
		case l.CPU >= 0 && !p.CPUs.Contains(l.CPU):
			bad("loop %d (thread %d) reported on CPU %d, outside the side's set %s", l.Index, l.Tid, l.CPU, set)
		case l.CPU >= 0:
			want[l.Tid], what[l.Tid] = strconv.Itoa(l.CPU), fmt.Sprintf("loop %d's CPU", l.Index)
		}
		if !slices.ContainsFunc(p.Masks, func(m ThreadMasks) bool { return m.Tid == l.Tid }) {
			bad("loop %d's thread %d was never seen by the samples: its mask is unverified", l.Index, l.Tid)
		}
	}
	for _, m := range p.Masks {
		w, isLoop := want[m.Tid]
		if !isLoop {
			w, what[m.Tid] = set, "its side's set"
		}
		for _, got := range m.Masks {
			if got != w && got != set {
				bad("thread %d on CPUs %s, want %s (%s)", m.Tid, got, w, what[m.Tid])
			}
		}
		if last := m.Masks[len(m.Masks)-1]; last != w {
			bad("thread %d last seen on CPUs %s, want %s (%s)", m.Tid, last, w, what[m.Tid])
		}
	}
	return out
}
