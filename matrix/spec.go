package matrix

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/target"
)

// ErrSpec is wrapped by every error Parse returns. Each such error reads
// "line N: field: what is wrong (accepted: ...)" where an accepted set
// exists.
var ErrSpec = errors.New("matrix: bad spec")

// DefaultRepeats is the number of repeats of a spec that does not say.
const DefaultRepeats = 3

// MaxRepeats bounds Spec.Repeats.
const MaxRepeats = 1000

// Spec is a parsed and validated one-factor-at-a-time spec. A Spec returned
// by Parse holds: Name is non-empty; Repeats is in 1..MaxRepeats; Baseline
// is a valid cell (its Target a design or a command, a load
// loadgen.Config.Validate accepts, reactor settings reactors.Config.Validate
// accepts); every factor names a field of Fields, has at least one value,
// and each of its values gives a valid cell different from the baseline and
// from every other cell.
type Spec struct {
	Name     string
	Baseline Settings
	Repeats  int
	Factors  []Factor

	// baseAt is where the baseline's target command is written.
	baseAt position
}

// Factor is one varied field and its alternative values, in the order
// written. Cells[i] is the whole cell the i-th value gives: the baseline
// with the field Name changed, nothing else.
type Factor struct {
	// Name is a field name of Fields.
	Name string
	// Cells holds one cell per value, in the order written.
	Cells []Cell
}

// Settings are the fields of one cell, as a spec's baseline writes them.
// The reactor-only fields (Callback, Workers, Budgets, Timer, AppTimer,
// ControlSched, Admission, Urgent, Loops, Assign, Exclusive,
// ReactorFaults) are zero with a command.
type Settings struct {
	// Target is what serves, never the zero Spec: a reference design (the
	// spec's reactor field, a design's name) or a black-box server command,
	// run by /bin/sh -c in the server's place (harness.CellSpec.Target; a
	// reactor or target field written {cmd: '...'}, the command never
	// empty).
	Target target.Spec
	// Label is the name a factor's value {cmd: '...', label: NAME} gives
	// its cell in place of the command (Cell.ID); "" without one, and
	// always in a baseline, whose cell is named baseline. A label matches
	// labelRE: letters, digits, '.', '_', '-', so that it reads the same
	// in a run directory's path and a benchmark name.
	Label string

	// Load is the cell's load: the knobs of loadgen.Knobs a spec takes
	// (those with a SpecRule), each, when the spec leaves it out, its
	// value in loadgen.SpecDefaults (run's default for duration and
	// warmup, else zero); no other field of it is set (the addresses are the
	// harness's, the wire faults are WireFaults). Among them: Control,
	// ControlTimeout and RemovalAfter only with ControlEvery; ChurnBurst
	// and ChurnMax only with ChurnRate; Loops is the spec's
	// loadgen_loops (0: one per CPU of the generator's set,
	// harness.DefaultLoadLoops), as loops is the reactor's; Engine is the
	// spec's loadgen_engine ("" left out: the epoll engine). StopAt sends
	// a STOP probe, which closes the reactor's admission, so frames after
	// it are rejected: keep it near the end.
	Load loadgen.Config

	// Callback is the reactor's callback cost spec ("" is the default,
	// "0").
	Callback string
	// Budgets maps a reactors.Config flag name of a budget (budget-input,
	// budget-consume, budget-bytes, budget-time, ..., clock-every) to its
	// value as that flag prints it; absent names keep the default. A
	// budgets factor's value is merged over the baseline's map.
	Budgets map[string]string
	// Timer is the reactor's timer mode; "" is the default.
	Timer reactors.TimerMode
	// AppTimer is the period of the reactor's recurring application timer
	// whose lateness it records (serve --app-timer; 0: none).
	AppTimer time.Duration
	// Workers is the reactor's callback pool size (serve --workers; 0 runs
	// callbacks inline on the loop).
	Workers int
	// ControlSched, Admission and Urgent are passed to the reactor as
	// serve --control-sched, --admission and --urgent take them (the
	// scheduling class of the control loop's thread, the admission limit,
	// the urgent-data mode); "" keeps the reactor's default.
	ControlSched string
	Admission    string
	Urgent       string
	// Loops, Assign and Exclusive are passed to the reactor as serve
	// --loops, --assign and --exclusive take them (a multi-loop design's
	// data loops, mainsub's assignment of accepted connections, the shared
	// listener's EPOLLEXCLUSIVE); 0 and "" keep the reactor's default. A
	// design that does not take one (a one-loop design with loops 4) is
	// refused in its own words.
	Loops     int
	Assign    string
	Exclusive string
	// RingBuffers is the number of provided receive buffers in each loop's
	// buffer ring of a design on the completion path (serve
	// --ring-buffers: a power of two, 1..32768); 0 keeps the reactor's
	// default. A design without a ring is refused it.
	RingBuffers int

	// WireFaults are faults.ParseWire specs, applied by the load generator;
	// ReactorFaults are reactors.ParseFault specs. Both in the order
	// written.
	WireFaults    []string
	ReactorFaults []string

	// ServerCPU caps the server's CPU time at this many CPUs (0.5: half of
	// one) with a cgroup CPU quota (lab.Spec.ServerCPU), so that the
	// server and not the load generator is the limit; 0: no cap. It applies
	// to reference reactors and black-box targets alike.
	ServerCPU float64
	// Placement is the cell's placement in lab.ParsePlacement's form
	// ("server=0-1,loadgen=2-3", "server=count:2,loadgen=count:2"); ""
	// places it as the matrix's --cpus says.
	Placement string
}

// Cell is one cell of an expanded spec: the baseline, or the baseline with
// the one field Factor changed to Value.
type Cell struct {
	// ID is "baseline", "factor=value", with the value in a canonical
	// form (durations as time.Duration prints them with "us" for µs, lists
	// joined by "+", an empty list as "none", maps as sorted k=v joined by
	// ","), or "factor=label" for a value with a label (Settings.Label).
	// It depends only on the spec's content, so it is stable across runs,
	// and it is unique within a spec.
	//
	// A label is the ID rather than a caption beside it because the ID is
	// the one name every report, bench.txt and compare give a cell: so a
	// labelled cell reads as its label everywhere, and compare, which
	// matches cells by ID and then checks their Config (which keeps the
	// command), compares a labelled cell only with one of the same label
	// and command: a label renamed shows as a cell only in the old runs
	// and one only in the new, and a label moved to another command as a
	// configuration that differs, never as the same cell. --resume
	// continues only the spec text it was run with, so its labels are the
	// recorded ones.
	ID string
	// Factor is "" for the baseline, else the changed field's name.
	Factor string
	// Value is the changed field's canonical value ("" for the baseline).
	Value string
	Settings

	// at is where the spec gave the cell's target command (zero when the
	// cell runs a reactor), so that a program found missing when the
	// matrix starts is reported at its line and field.
	at position
}

// position is a place in a spec: a line and the field there.
type position struct {
	line  int
	field string
}

// BaselineID is the ID of the baseline cell.
const BaselineID = "baseline"

// Expand returns the baseline cell, then every factor's cells in the order
// written. Every cell but the first differs from the baseline in exactly
// the field its Factor names. The result is fresh: changing it does not
// change s.
func (s *Spec) Expand() []Cell {
	out := []Cell{{ID: BaselineID, Settings: s.Baseline.clone(), at: s.baseAt}}
	for _, f := range s.Factors {
		for _, c := range f.Cells {
			c.Settings = c.Settings.clone()
			out = append(out, c)
		}
	}
	return out
}

func (s Settings) clone() Settings {
	s.Budgets = maps.Clone(s.Budgets)
	s.WireFaults = slices.Clone(s.WireFaults)
	s.ReactorFaults = slices.Clone(s.ReactorFaults)
	s.Load.Faults = slices.Clone(s.Load.Faults)
	s.Load.LoopCPUs = slices.Clone(s.Load.LoopCPUs)
	return s
}

// Configs maps a cell to what the harness runs: the reactor configuration
// (reactors.DefaultConfig with the cell's reactor settings applied through
// Config.Flags and ParseFault; meaningful only with a design) and the load
// (addresses left empty for the harness to fill in). For a cell from
// Expand the error is nil.
func (c Cell) Configs() (reactors.Config, loadgen.Config, error) {
	rc, err := c.reactorConfig()
	return rc, c.loadConfig(), err
}

// loadConfig is the cell's load with its wire faults.
func (s Settings) loadConfig() loadgen.Config {
	c := s.Load
	c.Faults = slices.Clone(s.WireFaults)
	return c
}

// reactorConfig applies the reactor settings to DefaultConfig.
func (s Settings) reactorConfig() (reactors.Config, error) {
	rc := reactors.DefaultConfig()
	for _, step := range s.reactorSteps() {
		if err := step.apply(&rc); err != nil {
			return rc, fmt.Errorf("%s: %w", step.field, err)
		}
	}
	return rc, nil
}

type reactorStep struct {
	field string
	apply func(*reactors.Config) error
}

// passThroughStep is the step of a reactor setting passed through to the
// serve flag named as field is (with '-' for '_'): v as the flag takes
// it; "" leaves the reactor's default.
func passThroughStep(field, v string, setFlag func(*reactors.Config, string, string) error) reactorStep {
	return reactorStep{field, func(rc *reactors.Config) error {
		if v == "" {
			return nil
		}
		return setFlag(rc, serveFlag(field), v)
	}}
}

// serveFlag is the reactorlab serve flag of a spec field: '-' for '_'.
func serveFlag(field string) string { return strings.ReplaceAll(field, "_", "-") }

// reactorSteps are the reactor settings as steps applied in order, so a
// failing Validate can be laid at the step that broke it.
func (s Settings) reactorSteps() []reactorStep {
	setFlag := func(rc *reactors.Config, name, v string) error {
		fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
		rc.Flags(fs)
		return fs.Set(name, v)
	}
	return []reactorStep{
		{"callback", func(rc *reactors.Config) error {
			if s.Callback == "" {
				return nil
			}
			return setFlag(rc, "callback", s.Callback)
		}},
		{"timer", func(rc *reactors.Config) error {
			if s.Timer == "" {
				return nil
			}
			return setFlag(rc, "timer", string(s.Timer))
		}},
		{"app_timer", func(rc *reactors.Config) error {
			if s.AppTimer == 0 {
				return nil
			}
			return setFlag(rc, "app-timer", s.AppTimer.String())
		}},
		{"workers", func(rc *reactors.Config) error {
			if s.Workers == 0 {
				return nil
			}
			return setFlag(rc, "workers", strconv.Itoa(s.Workers))
		}},
		{"loops", func(rc *reactors.Config) error {
			if s.Loops == 0 {
				return nil
			}
			return setFlag(rc, "loops", strconv.Itoa(s.Loops))
		}},
		{"ring_buffers", func(rc *reactors.Config) error {
			if s.RingBuffers == 0 {
				return nil
			}
			if d := s.design(); d != "" && !designs.Completion(d) {
				return fmt.Errorf("ring_buffers = %d: %s serves through no io_uring (accepted with %s)", s.RingBuffers, d, completionNames())
			}
			return setFlag(rc, "ring-buffers", strconv.Itoa(s.RingBuffers))
		}},
		passThroughStep("assign", s.Assign, setFlag),
		passThroughStep("exclusive", s.Exclusive, setFlag),
		passThroughStep("control_sched", s.ControlSched, setFlag),
		passThroughStep("admission", s.Admission, setFlag),
		passThroughStep("urgent", s.Urgent, setFlag),
		{"budgets", func(rc *reactors.Config) error {
			for _, k := range slices.Sorted(maps.Keys(s.Budgets)) {
				if err := setFlag(rc, k, s.Budgets[k]); err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
			}
			return nil
		}},
		{"faults", func(rc *reactors.Config) error {
			for _, f := range s.ReactorFaults {
				if err := reactors.ParseFault(f, &rc.Faults); err != nil {
					return err
				}
			}
			return nil
		}},
	}
}

// completionNames lists the designs on the completion path (those with a
// provided buffer ring), comma-separated, for refusals.
func completionNames() string {
	var names []string
	for _, d := range designs.Names() {
		if designs.Completion(d) {
			names = append(names, string(d))
		}
	}
	return strings.Join(names, ", ")
}
