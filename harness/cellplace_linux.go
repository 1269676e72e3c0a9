//go:build linux

package harness

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// DefaultLoadLoops is the number of event loops the load generator runs
// when the cell leaves Load.Loops at 0 (DefaultLoadLoopsRule): one per
// CPU of its set (client), at most one per connection; 1 when it is
// unpinned.
func DefaultLoadLoops(load loadgen.Config, client lab.SidePlacement) int {
	c := load.WithDefaults()
	return max(1, min(client.Len(), c.Hot+c.Steady+c.Control))
}

// Place returns the cell as it will run on this machine: its placement
// resolved against the CPUs this process may use (lab.Placement.Resolve: every
// count a list, every CPU allowed, the sides apart) and what follows from
// it: a reference reactor's loop CPUs (its side's set, unless
// Config.LoopCPUs already names CPUs of it), the load generator's loop
// CPUs (its side's set) and loops (DefaultLoadLoops when 0). A
// Config.LoopCPUs outside the server's set is refused, naming the CPU.
// RunCell runs the cell so placed; a matrix records it in its manifest.
func (cell CellSpec) Place() (CellSpec, error) {
	cpus, err := cell.Placement.ResolveAllowed()
	if err != nil {
		return cell, err
	}
	cell.Placement = cpus
	if d := cell.design(); d != "" && cpus.Server.Pinned() {
		for _, c := range cell.Config.LoopCPUs {
			if !cpus.Server.Contains(c) {
				return cell, fmt.Errorf("reactor %s: loop-cpus %s: CPU %d is not in the server's set %s", d, reactors.FormatCPUList(cell.Config.LoopCPUs), c, cpus.Server)
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

// Placed is where each side's loop threads ran, as the processes reported
// them and as the samples of every thread's mask verified them
// (CellResult.Placed). A side is nil when its process left no record.
type Placed struct {
	Server  *SidePlaced `json:"server,omitempty"`
	Loadgen *SidePlaced `json:"loadgen,omitempty"`
}

// SidePlaced is one side's part of Placed.
type SidePlaced struct {
	// Placement is the side's placement as resolved (lab.ProcResult.Placement; unpinned: the
	// mask it inherited).
	Placement lab.SidePlacement `json:"cpus"`
	// Loops are the loop threads the side reported, in loop order: a
	// reference reactor's (Stats.LoopThreads) or the load generator's
	// (Summary.Loops); none for a black box, which reports none.
	Loops []LoopPlaced `json:"loops,omitempty"`
	// Verified is true when the side is pinned and nothing was found
	// wrong with any of its threads: each loop thread on its CPU (having
	// been on the side's set only before it pinned itself), every other
	// thread on the set, every loop thread seen by the samples. False for
	// an unpinned side, which is not checked.
	Verified bool `json:"verified"`
}

// LoopPlaced is one loop thread of a side.
type LoopPlaced struct {
	// Loop is the loop's index in its process.
	Loop int `json:"loop"`
	// Role is what a reference design's loop serves (loopRoles: "data",
	// "control", "data and control", "worker" on a shared epoll set); ""
	// for the load generator's loops, which all serve connections.
	Role string `json:"role,omitempty"`
	// Tid is the loop's thread; CPU the CPU it pinned itself to (-1: not
	// pinned, its side unpinned).
	Tid int `json:"tid"`
	CPU int `json:"cpu"`
	// Verified is true when the loop is pinned, its CPU in its side's set,
	// and its thread was sampled and ended on that CPU, never seen on a
	// mask other than that CPU or the side's set.
	Verified bool `json:"verified"`
}

// loopPin is one loop thread as its process reported it: the thread and
// the CPU it pinned itself to (-1: none).
type loopPin struct {
	Index, Tid, CPU int
}

// checkPlacement holds each side's threads, as sampled (lab.ProcResult.Masks),
// to the loop threads the side reported: a reference reactor's
// Stats.LoopThreads, the load generator's Summary.Loops. On a pinned side
// each reported loop thread must end on its CPU (having been, before it
// pinned itself, only on the side's set) and every other thread must have
// stayed on the set; each problem is added to Invalid, naming the thread
// and both masks. What was verified, loop by loop, goes to Placed.
func (res *CellResult) checkPlacement() {
	labRes := res.Lab
	if labRes == nil {
		return
	}
	placed := &Placed{}
	if labRes.Server != nil {
		var pins []loopPin
		var roles []string
		if res.Server != nil {
			for i, l := range res.Server.LoopThreads {
				pins = append(pins, loopPin{Index: i, Tid: l.Tid, CPU: l.CPU})
			}
			roles = loopRoles(res.Cell.design(), res.Cell.serveConfig())
		}
		side, problems := placeSide("server", labRes.Server, pins, roles)
		placed.Server = side
		res.Invalid = append(res.Invalid, problems...)
	}
	if labRes.Client != nil {
		var pins []loopPin
		if res.Load != nil {
			for _, l := range res.Load.Loops {
				pins = append(pins, loopPin{Index: l.Index, Tid: l.Tid, CPU: l.CPU})
			}
		}
		side, problems := placeSide("loadgen", labRes.Client, pins, nil)
		placed.Loadgen = side
		res.Invalid = append(res.Invalid, problems...)
	}
	res.Placed = placed
}

// placeSide is checkPlacement for one side: its record, loop by loop
// (roles[i] the role of loop i, if known), and the problems found.
func placeSide(name string, p *lab.ProcResult, pins []loopPin, roles []string) (*SidePlaced, []string) {
	problems, bad := loopProblems(name, p, pins)
	side := &SidePlaced{Placement: p.Placement, Verified: p.Placement.Pinned() && p.AffinityOK && len(problems) == 0}
	for _, l := range pins {
		lp := LoopPlaced{Loop: l.Index, Tid: l.Tid, CPU: l.CPU}
		if l.Index < len(roles) {
			lp.Role = roles[l.Index]
		}
		lp.Verified = p.Placement.Pinned() && l.CPU >= 0 && !bad[l.Tid] && p.AffinityOK
		side.Loops = append(side.Loops, lp)
	}
	return side, problems
}

// loopProblems holds one side's sampled threads to its reported loops
// (see checkPlacement): the problems, each naming the thread and the
// masks, and the threads they are about. An unpinned side has none.
func loopProblems(name string, p *lab.ProcResult, pins []loopPin) ([]string, map[int]bool) {
	if !p.Placement.Pinned() {
		return nil, nil
	}
	set := p.Placement.String()
	var out []string
	bad := map[int]bool{}
	fault := func(tid int, format string, a ...any) {
		bad[tid] = true
		out = append(out, fmt.Sprintf("placement: %s: ", name)+fmt.Sprintf(format, a...))
	}
	want := map[int]string{} // tid → the mask it must end on
	what := map[int]string{} // tid → what the thread is, for the message
	for _, l := range pins {
		switch {
		case l.CPU >= 0 && !p.Placement.Contains(l.CPU):
			fault(l.Tid, "loop %d (thread %d) reported on CPU %d, outside the side's set %s", l.Index, l.Tid, l.CPU, set)
		case l.CPU >= 0:
			want[l.Tid], what[l.Tid] = strconv.Itoa(l.CPU), fmt.Sprintf("loop %d's CPU", l.Index)
		}
		if !slices.ContainsFunc(p.Masks, func(m lab.ThreadMasks) bool { return m.Tid == l.Tid }) {
			fault(l.Tid, "loop %d's thread %d was never seen by the samples: its mask is unverified", l.Index, l.Tid)
		}
	}
	for _, m := range p.Masks {
		w, isLoop := want[m.Tid]
		if !isLoop {
			w, what[m.Tid] = set, "its side's set"
		}
		for _, got := range m.Masks {
			if got != w && got != set {
				fault(m.Tid, "thread %d on CPUs %s, want %s (%s)", m.Tid, got, w, what[m.Tid])
			}
		}
		if last := m.Masks[len(m.Masks)-1]; last != w {
			fault(m.Tid, "thread %d last seen on CPUs %s, want %s (%s)", m.Tid, last, w, what[m.Tid])
		}
	}
	return out, bad
}

// loopRoles names what each loop of reference design d serves under cfg,
// from its layout (reactors.Layout): loop 0 data (and control, when the
// control listener goes to it too), Layout.ControlLoop control, any other
// loop "loop"; every loop of a shared epoll set "worker". Nil when the
// design is unknown.
func loopRoles(d reactors.DesignName, cfg reactors.Config) []string {
	bp, err := designs.Lookup(d)
	if err != nil {
		return nil
	}
	policy, ok := bp.(reactors.Policy)
	if !ok {
		return nil
	}
	lay := policy.Layout(&cfg)
	roles := make([]string, lay.Loops)
	for i := range roles {
		switch {
		case lay.Shared:
			roles[i] = "worker"
		case i == 0 && lay.ControlLoop == 0:
			roles[i] = "data and control"
		case i == 0:
			roles[i] = "data"
		case i == lay.ControlLoop:
			roles[i] = "control"
		default:
			roles[i] = "loop"
		}
	}
	return roles
}
