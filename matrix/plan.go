package matrix

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results"
)

// Shard is a deterministic share of a spec's factor cells: cell i (1-based,
// in spec order, the baseline not counted) belongs to shard
// ((i-1) mod Count) + 1. Every shard runs the baseline paired with each of
// its cells, so each shard's ratios are measured on one machine. The zero
// Shard means 1/1, everything.
type Shard struct {
	Index int // 1..Count
	Count int
}

// ErrShard is wrapped by ParseShard's errors.
var ErrShard = errors.New("matrix: bad shard")

// MaxShards bounds Shard.Count.
const MaxShards = 256

// ParseShard reads "i/n" with 1 <= i <= n <= MaxShards.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > MaxShards || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%w: %q (accepted: i/n with 1 <= i <= n <= %d, e.g. 2/4)", ErrShard, s, MaxShards)
	}
	return Shard{Index: i, Count: n}, nil
}

// orAll returns s, or 1/1 for the zero Shard.
func (s Shard) orAll() Shard {
	if s.Count == 0 {
		return Shard{Index: 1, Count: 1}
	}
	return s
}

// String prints "i/n".
func (s Shard) String() string {
	s = s.orAll()
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// PlannedRun is one run of a plan: a cell, its repeat, and the pair it
// belongs to.
type PlannedRun struct {
	Cell   Cell
	Repeat int
	// Pair is the factor cell's ID for both runs of a pair (the baseline
	// run, then the cell's run); "" for a spec without factors.
	Pair string
	// Dir is the run's directory relative to the run directory. It depends
	// only on the cell, the repeat and the pair, never on the shard, so a
	// merge of shards lays out its runs as an unsharded run does.
	Dir string
}

// Plan returns the runs of shard sh of s, in the order they run: for each
// repeat r = 1..Repeats, for each factor cell c of the shard, the baseline
// and then c (A B A C … A B A C …). Within a repeat the cells start one
// further along each time (rotation), so no cell always follows the same
// neighbour. A spec without factors gives Repeats baseline runs, all in
// shard 1. The union of the plans of shards 1/n … n/n is the plan of 1/1,
// whatever n.
func (s *Spec) Plan(sh Shard) []PlannedRun {
	sh = sh.orAll()
	cells := s.Expand()
	base := cells[0]
	var mine []int // indexes into cells
	for i := 1; i < len(cells); i++ {
		if (i-1)%sh.Count+1 == sh.Index {
			mine = append(mine, i)
		}
	}
	var out []PlannedRun
	if len(cells) == 1 {
		if sh.Index != 1 {
			return nil
		}
		for r := 1; r <= s.Repeats; r++ {
			out = append(out, PlannedRun{Cell: base, Repeat: r, Dir: runDir(0, base.ID, r, "")})
		}
		return out
	}
	for r := 1; r <= s.Repeats; r++ {
		for k := range mine {
			i := mine[(k+r-1)%len(mine)]
			c := cells[i]
			out = append(out,
				PlannedRun{Cell: base, Repeat: r, Pair: c.ID, Dir: runDir(0, base.ID, r, fmt.Sprintf("c%02d", i))},
				PlannedRun{Cell: c, Repeat: r, Pair: c.ID, Dir: runDir(i, c.ID, r, "")})
		}
	}
	return out
}

// ShardCells returns the IDs of the factor cells in shard sh.
func (s *Spec) ShardCells(sh Shard) []string {
	sh = sh.orAll()
	var out []string
	for i, c := range s.Expand() {
		if i > 0 && (i-1)%sh.Count+1 == sh.Index {
			out = append(out, c.ID)
		}
	}
	return out
}

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._=+,-]+`)

// runDir is runs/cNN-<id, made safe>/r<repeat>[-with-cMM]: the cell's
// index keeps it unique whatever the sanitising merged.
func runDir(index int, id string, repeat int, with string) string {
	slug := unsafeRE.ReplaceAllString(id, "_")
	if len(slug) > 60 {
		slug = slug[:60]
	}
	leaf := fmt.Sprintf("r%d", repeat)
	if with != "" {
		leaf += "-with-" + with
	}
	return path.Join(results.RunsDir, fmt.Sprintf("c%02d-%s", index, slug), leaf)
}

// Info describes c for a run directory's manifest.
func (c Cell) Info() results.CellInfo {
	cfg := map[string]string{}
	for _, name := range Fields {
		if unset := unsetFields[name]; unset != nil && unset(&c) {
			continue
		}
		if unset := fields[name].unset; unset != nil && unset(&c.Settings) {
			continue
		}
		cfg[name] = fields[name].text(&c.Settings)
	}
	return results.CellInfo{ID: c.ID, Factor: c.Factor, Value: c.Value, Label: c.Label, Config: cfg, Describe: c.Describe()}
}

// unsetFields are the fields a manifest leaves out when a cell does not
// use them (target, reactor) or leaves them at their default, so that
// manifests written before the field existed still compare; the load
// knobs say it in their loadgen.SpecRule (OmitDefault, field.unset).
var unsetFields = map[string]func(c *Cell) bool{
	"target":        func(c *Cell) bool { return !c.Target.IsCommand() },
	"reactor":       func(c *Cell) bool { return !c.Target.IsDesign() },
	"server_cpu":    func(c *Cell) bool { return c.ServerCPU == 0 },
	"cpus":          func(c *Cell) bool { return c.Placement == "" },
	"control_sched": func(c *Cell) bool { return c.ControlSched == "" },
	"admission":     func(c *Cell) bool { return c.Admission == "" },
	"urgent":        func(c *Cell) bool { return c.Urgent == "" },
	"loops":         func(c *Cell) bool { return c.Loops == 0 },
	"assign":        func(c *Cell) bool { return c.Assign == "" },
	"exclusive":     func(c *Cell) bool { return c.Exclusive == "" },
	"ring_buffers":  func(c *Cell) bool { return c.RingBuffers == 0 },
}

// Describe says in one line what the cell runs.
func (c Cell) Describe() string {
	var parts []string
	if c.Target.IsDesign() {
		parts = append(parts, c.Target.Design())
	} else {
		parts = append(parts, "target "+c.Target.Command())
	}
	if c.Load.Hot > 0 {
		parts = append(parts, fmt.Sprintf("%d hot × %d in flight", c.Load.Hot, c.Load.InFlight))
	}
	if c.Load.Steady > 0 {
		parts = append(parts, fmt.Sprintf("%d steady at %g frames/s", c.Load.Steady, c.Load.Rate))
	}
	if c.Load.ControlEvery > 0 {
		on := ""
		if c.controlConns() > 1 {
			on = " on each of " + fields["control"].text(&c.Settings) + " connections"
		}
		parts = append(parts, "PING every "+fields["control_every"].text(&c.Settings)+on+" (timeout "+
			fields["control_timeout"].text(&c.Settings)+", removal after "+fields["removal_after"].text(&c.Settings)+" in a row)")
	}
	if c.Load.StopAt > 0 {
		parts = append(parts, "STOP at "+fields["stop_at"].text(&c.Settings))
	}
	if c.Load.UrgentEvery > 0 {
		parts = append(parts, "urgent byte every "+fields["urgent_every"].text(&c.Settings))
	}
	if c.Load.ChurnRate > 0 {
		parts = append(parts, c.describeChurn())
	}
	if c.Load.HotLead > 0 {
		parts = append(parts, "hot lead "+fields["hot_lead"].text(&c.Settings))
	}
	if c.Target.IsDesign() {
		if c.Loops > 0 {
			parts = append(parts, fmt.Sprintf("%d loops", c.Loops))
		}
		if c.RingBuffers > 0 {
			parts = append(parts, fmt.Sprintf("%d ring buffers a loop", c.RingBuffers))
		}
		for _, name := range []string{"assign", "exclusive", "control_sched", "admission", "urgent"} {
			if v := fields[name].text(&c.Settings); v != passThroughText(name, "") {
				parts = append(parts, name+" "+v)
			}
		}
		parts = append(parts, "callback "+fields["callback"].text(&c.Settings))
		if len(c.Budgets) > 0 {
			parts = append(parts, "budgets "+fields["budgets"].text(&c.Settings))
		}
		parts = append(parts, "timer "+fields["timer"].text(&c.Settings))
	}
	if len(c.WireFaults)+len(c.ReactorFaults) > 0 {
		parts = append(parts, "faults "+fields["faults"].text(&c.Settings))
	}
	if c.ServerCPU > 0 {
		parts = append(parts, "server capped at "+fields["server_cpu"].text(&c.Settings)+" CPU")
	}
	if c.Placement != "" {
		parts = append(parts, "cpus "+c.Placement)
	}
	if c.Load.Loops > 0 {
		parts = append(parts, fmt.Sprintf("%d load generator loops", c.Load.Loops))
	}
	if c.Load.Engine != "" && c.Load.Engine != loadgen.EngineEpoll {
		parts = append(parts, "load generator engine "+c.Load.Engine)
	}
	parts = append(parts, fields["duration"].text(&c.Settings)+" after "+fields["warmup"].text(&c.Settings)+" warm-up")
	return strings.Join(parts, ", ")
}

// describeChurn says what churn the cell opens, loadgen's defaults
// written out.
func (c Cell) describeChurn() string {
	burst, most := c.Load.ChurnBurst, c.Load.ChurnMax
	if burst == 0 {
		burst = 1
	}
	if most == 0 {
		most = loadgen.DefaultChurnMax
	}
	return fmt.Sprintf("churn %s connections/s in bursts of %d (at most %d open)", fields["churn_rate"].text(&c.Settings), burst, most)
}
