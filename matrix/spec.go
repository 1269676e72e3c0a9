package matrix

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/designs"
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
// is a valid cell (exactly one of Reactor and Target set, a load
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

// Target is a black-box server run in the reactor's place.
type Target struct {
	// Cmd is run by /bin/sh -c (see harness.Cell.Target); never empty.
	Cmd string
}

// Settings are the fields of one cell, as a spec's baseline writes them.
// Exactly one of Reactor and Target is set. The reactor-only fields
// (Callback, Workers, Budgets, Timer, AppTimer, ReactorFaults) are zero with a Target.
type Settings struct {
	Reactor reactors.Design
	Target  Target

	// The load: as loadgen.Config's fields of the same names.
	Hot          int
	InFlight     int
	Steady       int
	Rate         float64
	ControlEvery time.Duration
	// StopAt sends a STOP probe at this offset into the measured period
	// (loadgen.Config.StopAt; 0: none). STOP closes the reactor's
	// admission, so frames after it are rejected: keep it near the end.
	StopAt time.Duration

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

	// WireFaults are faults.ParseWire specs, applied by the load generator;
	// ReactorFaults are reactors.ParseFault specs. Both in the order
	// written.
	WireFaults    []string
	ReactorFaults []string

	// ServerCPU caps the server's CPU time at this many CPUs (0.5: half of
	// one) with a cgroup CPU quota (harness.LabSpec.ServerCPU), so that the
	// server and not the load generator is the limit; 0: no cap. It applies
	// to reference reactors and black-box targets alike.
	ServerCPU float64

	Duration time.Duration
	Warmup   time.Duration
}

// Cell is one cell of an expanded spec: the baseline, or the baseline with
// the one field Factor changed to Value.
type Cell struct {
	// ID is "baseline" or "factor=value", with the value in a canonical
	// form (durations as time.Duration prints them with "us" for µs, lists
	// joined by "+", an empty list as "none", maps as sorted k=v joined by
	// ","). It depends only on the spec's content, so it is stable across
	// runs, and it is unique within a spec.
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
	return s
}

// Configs maps a cell to what the harness runs: the reactor configuration
// (reactors.DefaultConfig with the cell's reactor settings applied through
// Config.Flags and ParseFault; meaningful only with a Reactor) and the load
// (addresses left empty for the harness to fill in). For a cell from
// Expand the error is nil.
func (c Cell) Configs() (reactors.Config, loadgen.Config, error) {
	rc, err := c.reactorConfig()
	return rc, c.loadConfig(), err
}

func (s Settings) loadConfig() loadgen.Config {
	return loadgen.Config{
		Hot: s.Hot, InFlight: s.InFlight, Steady: s.Steady, Rate: s.Rate,
		ControlEvery: s.ControlEvery, StopAt: s.StopAt, Duration: s.Duration, Warmup: s.Warmup,
		Faults: slices.Clone(s.WireFaults),
	}
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

// Fields lists the baseline fields a factor may name, in the order Parse
// reads them.
var Fields = []string{
	"reactor", "target", "hot", "inflight", "steady", "rate", "control_every", "stop_at",
	"callback", "workers", "budgets", "timer", "app_timer", "faults", "server_cpu", "duration", "warmup",
}

// field decodes, compares and prints one baseline field.
type field struct {
	decode func(n *yaml.Node, s *Settings) error
	equal  func(a, b *Settings) bool
	text   func(s *Settings) string
}

var fields = map[string]field{
	// reactor is what serves: a reference design, or (a mapping {cmd: …},
	// as target takes) a black-box command in its place, so that one
	// factor can set reference reactors and third-party servers side by
	// side.
	"reactor": {
		decode: func(n *yaml.Node, s *Settings) error {
			if n.Kind == yaml.MappingNode {
				if err := decodeTarget(n, s); err != nil {
					return err
				}
				s.Reactor = ""
				return nil
			}
			v, err := scalar(n)
			if err != nil {
				return fmt.Errorf("%w (or a mapping {cmd: '...'} for a black-box server)", err)
			}
			d, err := reactors.ParseDesign(v)
			s.Reactor, s.Target = d, Target{}
			return err
		},
		equal: func(a, b *Settings) bool { return a.Reactor == b.Reactor && a.Target == b.Target },
		text: func(s *Settings) string {
			if s.Reactor == "" && s.Target != (Target{}) {
				return "cmd:" + s.Target.Cmd
			}
			return string(s.Reactor)
		},
	},
	"target": {
		decode: decodeTarget,
		equal:  func(a, b *Settings) bool { return a.Target == b.Target },
		text:   func(s *Settings) string { return "cmd:" + s.Target.Cmd },
	},
	"hot":      intField(func(s *Settings) *int { return &s.Hot }),
	"inflight": intField(func(s *Settings) *int { return &s.InFlight }),
	"steady":   intField(func(s *Settings) *int { return &s.Steady }),
	"rate": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
				return fmt.Errorf("%q is not a rate (accepted: a number >= 0 of frames/s)", v)
			}
			s.Rate = r
			return nil
		},
		equal: func(a, b *Settings) bool { return a.Rate == b.Rate },
		text:  func(s *Settings) string { return strconv.FormatFloat(s.Rate, 'g', -1, 64) },
	},
	"control_every": durField(func(s *Settings) *time.Duration { return &s.ControlEvery }),
	"server_cpu": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			c, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(c) || math.IsInf(c, 0) || c < 0 || c > proc.MaxCPUShare {
				return fmt.Errorf("%q is not a CPU cap (accepted: a number of CPUs, %v..%d, e.g. 0.5; 0 for none)", v, proc.MinCPUShare, proc.MaxCPUShare)
			}
			if c > 0 && c < proc.MinCPUShare {
				return fmt.Errorf("%q is below the least cap, %v CPU (a 1 ms quota per 20 ms period)", v, proc.MinCPUShare)
			}
			s.ServerCPU = c
			return nil
		},
		equal: func(a, b *Settings) bool { return a.ServerCPU == b.ServerCPU },
		text:  func(s *Settings) string { return strconv.FormatFloat(s.ServerCPU, 'g', -1, 64) },
	},
	"stop_at": durField(func(s *Settings) *time.Duration { return &s.StopAt }),
	"callback": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			if v == "" {
				return errors.New("empty (accepted: a cost spec as reactorlab serve --callback takes, e.g. 0, 50us, uniform:10us-90us)")
			}
			if _, err := cost.Parse(v); err != nil {
				return err
			}
			s.Callback = v
			return nil
		},
		equal: func(a, b *Settings) bool { return orDefault(a.Callback, "0") == orDefault(b.Callback, "0") },
		text:  func(s *Settings) string { return orDefault(s.Callback, "0") },
	},
	"budgets": {
		decode: decodeBudgets,
		equal:  func(a, b *Settings) bool { return maps.Equal(a.Budgets, b.Budgets) },
		text: func(s *Settings) string {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(s.Budgets)) {
				kv = append(kv, k+"="+s.Budgets[k])
			}
			return orDefault(strings.Join(kv, ","), "default")
		},
	},
	"timer": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			switch m := reactors.TimerMode(v); m {
			case reactors.TimerPeriodic, reactors.TimerDeadline:
				s.Timer = m
				return nil
			}
			return fmt.Errorf("unknown timer mode %q (accepted: periodic, deadline)", v)
		},
		equal: func(a, b *Settings) bool {
			return orDefault(string(a.Timer), string(reactors.DefaultConfig().Timer)) == orDefault(string(b.Timer), string(reactors.DefaultConfig().Timer))
		},
		text: func(s *Settings) string { return orDefault(string(s.Timer), string(reactors.DefaultConfig().Timer)) },
	},
	"faults": {
		decode: decodeFaults,
		equal: func(a, b *Settings) bool {
			return slices.Equal(a.WireFaults, b.WireFaults) && slices.Equal(a.ReactorFaults, b.ReactorFaults)
		},
		text: func(s *Settings) string {
			return orDefault(strings.Join(append(slices.Clone(s.WireFaults), s.ReactorFaults...), "+"), "none")
		},
	},
	"app_timer": durField(func(s *Settings) *time.Duration { return &s.AppTimer }),
	"workers":   intField(func(s *Settings) *int { return &s.Workers }),
	"duration":  durField(func(s *Settings) *time.Duration { return &s.Duration }),
	"warmup":    durField(func(s *Settings) *time.Duration { return &s.Warmup }),
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func intField(p func(*Settings) *int) field {
	return field{
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return fmt.Errorf("%q is not a count (accepted: an integer >= 0)", v)
			}
			*p(s) = i
			return nil
		},
		equal: func(a, b *Settings) bool { return *p(a) == *p(b) },
		text:  func(s *Settings) string { return strconv.Itoa(*p(s)) },
	}
}

func durField(p func(*Settings) *time.Duration) field {
	return field{
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("%q is not a duration (accepted: >= 0 with a unit, e.g. 500us, 2s)", v)
			}
			*p(s) = d
			return nil
		},
		equal: func(a, b *Settings) bool { return *p(a) == *p(b) },
		text:  func(s *Settings) string { return strings.ReplaceAll((*p(s)).String(), "µ", "u") },
	}
}

// scalar returns n's value if n is a scalar.
func scalar(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("a %s where a single value belongs (accepted: a scalar)", kindName(n))
	}
	return strings.TrimSpace(n.Value), nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

func decodeTarget(n *yaml.Node, s *Settings) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("a %s (accepted: a mapping {cmd: '...'})", kindName(n))
	}
	var t Target
	seen := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != "cmd" {
			return lineErr(k, "target."+k.Value, errors.New("unknown key (accepted: cmd)"))
		}
		if seen {
			return lineErr(k, "target.cmd", errors.New("given twice"))
		}
		seen = true
		c, err := scalar(v)
		if err != nil {
			return lineErr(v, "target.cmd", err)
		}
		if c == "" {
			return lineErr(v, "target.cmd", errors.New("empty (accepted: a shell command)"))
		}
		t.Cmd = c
	}
	if !seen {
		return errors.New("no cmd (accepted: a mapping {cmd: '...'})")
	}
	s.Target = t
	return nil
}

// budgetNames are reactors.Config's flags of reactors.Budgets: those
// starting "budget-", and clock-every; sorted.
var budgetNames = func() []string {
	var out []string
	rc := reactors.DefaultConfig()
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	rc.Flags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "budget-") || f.Name == "clock-every" {
			out = append(out, f.Name)
		}
	})
	return out
}()

func decodeBudgets(n *yaml.Node, s *Settings) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("a %s (accepted: a mapping of %s)", kindName(n), strings.Join(budgetNames, ", "))
	}
	// Merge over what s has, so a factor's value changes the budgets it
	// names and keeps the baseline's others.
	b := maps.Clone(s.Budgets)
	if b == nil {
		b = map[string]string{}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := "budgets." + k.Value
		if !slices.Contains(budgetNames, k.Value) {
			return lineErr(k, name, fmt.Errorf("unknown budget (accepted: %s)", strings.Join(budgetNames, ", ")))
		}
		if seen[k.Value] {
			return lineErr(k, name, errors.New("given twice"))
		}
		seen[k.Value] = true
		val, err := scalar(v)
		if err != nil {
			return lineErr(v, name, err)
		}
		rc := reactors.DefaultConfig()
		fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
		rc.Flags(fs)
		if err := fs.Set(k.Value, val); err != nil {
			return lineErr(v, name, fmt.Errorf("%q: %v (accepted: %s)", val, err, fs.Lookup(k.Value).Usage))
		}
		// Canonical text, so "8" and "08" compare equal.
		b[k.Value] = fs.Lookup(k.Value).Value.String()
	}
	s.Budgets = b
	return nil
}

// reactorFaultName reports whether spec names a reactor fault.
func reactorFaultName(spec string) bool {
	name, _, _ := strings.Cut(spec, ":")
	name = strings.TrimSpace(name)
	for _, f := range reactors.FaultNames {
		if n, _, _ := strings.Cut(f, "["); n == name {
			return true
		}
	}
	return false
}

func decodeFaults(n *yaml.Node, s *Settings) error {
	var items []*yaml.Node
	switch n.Kind {
	case yaml.SequenceNode:
		items = n.Content
	case yaml.ScalarNode:
		items = []*yaml.Node{n}
	default:
		return fmt.Errorf("a %s (accepted: a fault spec or a list of them)", kindName(n))
	}
	var wire, react []string
	for i, it := range items {
		name := fmt.Sprintf("faults[%d]", i)
		v, err := scalar(it)
		if err != nil {
			return lineErr(it, name, err)
		}
		if reactorFaultName(v) {
			var f reactors.Faults
			if err := reactors.ParseFault(v, &f); err != nil {
				return lineErr(it, name, err)
			}
			react = append(react, v)
			continue
		}
		f, err := faults.ParseWire(v)
		if err != nil {
			return lineErr(it, name, fmt.Errorf("%w; nor a reactor fault (accepted: %s)", err, strings.Join(reactors.FaultNames, ", ")))
		}
		if st, ok := f.(fmt.Stringer); ok {
			v = st.String() // canonical, so equal faults compare equal
		}
		wire = append(wire, v)
	}
	s.WireFaults, s.ReactorFaults = wire, react
	return nil
}

// posError is an error already located at a line and field.
type posError struct {
	line  int
	field string
	err   error
}

func (e *posError) Error() string {
	return fmt.Sprintf("line %d: %s: %v", e.line, e.field, e.err)
}

func (e *posError) Unwrap() []error { return []error{ErrSpec, e.err} }

// lineErr locates err at n, unless it is already located.
func lineErr(n *yaml.Node, field string, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return err
	}
	return &posError{line: n.Line, field: field, err: err}
}

// mapping checks that n is a mapping with keys among allowed, each once,
// and returns key and value nodes by key.
func mapping(n *yaml.Node, what string, allowed []string) (keys, vals map[string]*yaml.Node, err error) {
	if n.Kind != yaml.MappingNode {
		return nil, nil, lineErr(n, what, fmt.Errorf("a %s (accepted: a mapping of %s)", kindName(n), strings.Join(allowed, ", ")))
	}
	keys, vals = map[string]*yaml.Node{}, map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		if what != "spec" {
			name = what + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode || !slices.Contains(allowed, k.Value) {
			return nil, nil, lineErr(k, name, fmt.Errorf("unknown key (accepted: %s)", strings.Join(allowed, ", ")))
		}
		if _, dup := keys[k.Value]; dup {
			return nil, nil, lineErr(k, name, errors.New("given twice"))
		}
		keys[k.Value], vals[k.Value] = k, v
	}
	return keys, vals, nil
}

var yamlLineRE = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Parse reads a spec from YAML and validates it (see Spec for what holds
// of the result). Errors wrap ErrSpec and read "line N: field: problem".
// Anchors and aliases are refused; only the first YAML document is read.
func Parse(data []byte) (*Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(data, err)
	}
	return parseDoc(&doc)
}

// yamlError puts the line of yaml.v3's "yaml: line N: problem" first, as
// every other error does, counted from 1 as every other error does. A few
// of its errors (bad encoding) have no line: they wrap ErrSpec as they are.
//
// yaml.v3 (v3.0.1, parser.fail in decode.go) names the line of the
// problem's context when it has one (where the mapping, list or quoted
// scalar it was in began), else the line of the problem; counts it from 0,
// adding 1 for its scanner's errors only; and names no line when that
// number is 0. So the error is read from data parsed again behind one
// empty line: every mark is then on a line counted from 1 (from 2 for the
// scanner, less one here), never 0. For an unclosed '{' or '[' that is the
// bracket's line. A block mapping or list broken further down (a key or
// '-' where none fits) names its context, where the mapping or list
// begins; the line where the problem shows is found by parsing data once
// more from the context's line on: the context is then on the stream's
// first line, whose number yaml.v3 does not name, so it names the
// problem's, counted from the context's. Three parses at most, each linear
// in data. TestParseErrors pins every case's line, so a yaml.v3 that
// counts otherwise fails it rather than misreport.
func yamlError(data []byte, err error) error {
	line, problem := yamlLine(err)
	parser := slices.Contains(parserProblems, problem)
	at, again := yamlLine(decodeAll(behindNewline(data)))
	if again != problem {
		// Parsed behind a newline, data fails otherwise (an encoding that
		// one byte more breaks): yaml.v3's own count, as it is.
		if line == 0 {
			return fmt.Errorf("%w: %v", ErrSpec, err)
		}
		if parser {
			line++
		}
		return &posError{line: line, field: "yaml", err: errors.New(problem)}
	}
	if !parser {
		at--
	}
	if at < 1 {
		return fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if slices.Contains(blockProblems, problem) {
		lines := bytes.SplitAfter(data, []byte("\n"))
		if at <= len(lines) {
			if n, p := yamlLine(decodeAll(bytes.Join(lines[at-1:], nil))); p == problem && n > 0 {
				return &posError{line: at + n, field: "yaml", err: fmt.Errorf("%s (in the mapping or list that begins at line %d)", problem, at)}
			}
		}
	}
	return &posError{line: at, field: "yaml", err: errors.New(problem)}
}

// yamlLine splits a yaml.v3 error into the line it names (0: none) and
// its problem, without "yaml: "; nil is 0, "".
func yamlLine(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, strings.TrimPrefix(err.Error(), "yaml: ")
}

// behindNewline is data with an empty line before it (after its UTF-8
// byte order mark, if it has one).
func behindNewline(data []byte) []byte {
	bom := []byte("\xef\xbb\xbf")
	if bytes.HasPrefix(data, bom) {
		return slices.Concat(bom, []byte("\n"), data[len(bom):])
	}
	return slices.Concat([]byte("\n"), data)
}

// blockProblems are the parser's problems whose context is a block
// mapping or list that began before the line where the problem shows.
var blockProblems = []string{
	"did not find expected key",
	"did not find expected '-' indicator",
}

// parserProblems are the problems yaml.v3's parser (not its scanner)
// reports, whose line it counts from 0.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// decodeAll decodes every document of data and returns the first error.
func decodeAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// MaxSuiteSpecs bounds the number of specs in one suite.
const MaxSuiteSpecs = 64

// ParseSuite reads a suite: one or more specs, each a YAML document
// ("---" between them), each as Parse reads it, with line numbers counted
// from the start of data. Spec names are unique within the suite. The
// result holds at least one spec.
func ParseSuite(data []byte) ([]*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*Spec
	names := map[string]int{}
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlError(data, err)
		}
		if len(out) == MaxSuiteSpecs {
			return nil, lineErr(&doc, "suite", fmt.Errorf("more than %d specs (accepted: at most %d documents)", MaxSuiteSpecs, MaxSuiteSpecs))
		}
		spec, err := parseDoc(&doc)
		if err != nil {
			return nil, err
		}
		if prev, dup := names[spec.Name]; dup {
			return nil, lineErr(&doc, "name", fmt.Errorf("%q is also the name of the spec at line %d (accepted: one name per spec of a suite)", spec.Name, prev))
		}
		names[spec.Name] = doc.Line
		out = append(out, spec)
	}
	if len(out) == 0 {
		return nil, &posError{line: 1, field: "spec", err: errors.New("empty (accepted: a mapping of name, baseline, repeats, factors)")}
	}
	return out, nil
}

// parseDoc reads one YAML document as a spec.
func parseDoc(doc *yaml.Node) (*Spec, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &posError{line: 1, field: "spec", err: errors.New("empty (accepted: a mapping of name, baseline, repeats, factors)")}
	}
	if n := findAlias(doc); n != nil {
		return nil, lineErr(n, "spec", errors.New("anchors and aliases are not supported (accepted: plain YAML)"))
	}
	root := doc.Content[0]
	keys, vals, err := mapping(root, "spec", []string{"name", "baseline", "repeats", "factors"})
	if err != nil {
		return nil, err
	}
	spec := &Spec{Repeats: DefaultRepeats}
	n, ok := vals["name"]
	if !ok {
		return nil, lineErr(root, "name", errors.New("missing (accepted: a name of letters, digits, '.', '_', '-')"))
	}
	if spec.Name, err = scalar(n); err != nil {
		return nil, lineErr(n, "name", err)
	}
	if !nameRE.MatchString(spec.Name) {
		return nil, lineErr(n, "name", fmt.Errorf("%q (accepted: letters, digits, '.', '_', '-', starting with a letter or digit)", spec.Name))
	}
	if n, ok := vals["repeats"]; ok {
		v, err := scalar(n)
		if err != nil {
			return nil, lineErr(n, "repeats", err)
		}
		r, err := strconv.Atoi(v)
		if err != nil || r < 1 || r > MaxRepeats {
			return nil, lineErr(n, "repeats", fmt.Errorf("%q (accepted: 1..%d)", v, MaxRepeats))
		}
		spec.Repeats = r
	}
	bn, ok := vals["baseline"]
	if !ok {
		return nil, lineErr(root, "baseline", errors.New("missing (accepted: a mapping of "+strings.Join(Fields, ", ")+")"))
	}
	base, lines, err := parseBaseline(bn)
	if err != nil {
		return nil, err
	}
	spec.Baseline = base
	if base.Target != (Target{}) {
		for _, f := range []string{"reactor", "target"} {
			if n, ok := lines[f]; ok && n.Kind == yaml.MappingNode {
				spec.baseAt = position{line: cmdLine(n), field: f + ".cmd"}
			}
		}
	}
	if err := check(&base, func(f string) (*yaml.Node, string) {
		if l, ok := lines[f]; ok {
			return l, f
		}
		return keys["baseline"], "baseline." + f
	}); err != nil {
		return nil, err
	}
	if fn, ok := vals["factors"]; ok {
		if spec.Factors, err = parseFactors(fn, &base, spec.baseAt); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

func findAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return n
	}
	for _, c := range n.Content {
		if a := findAlias(c); a != nil {
			return a
		}
	}
	return nil
}

// parseBaseline decodes the baseline's fields, returning the value node
// of each field given.
func parseBaseline(n *yaml.Node) (Settings, map[string]*yaml.Node, error) {
	var s Settings
	_, vals, err := mapping(n, "baseline", Fields)
	if err != nil {
		return s, nil, err
	}
	if _, ok := vals["reactor"]; ok {
		if v, ok := vals["target"]; ok {
			return s, nil, lineErr(v, "target", errors.New("both reactor and target (accepted: exactly one of them)"))
		}
	}
	for _, name := range Fields {
		v, ok := vals[name]
		if !ok {
			continue
		}
		if err := fields[name].decode(v, &s); err != nil {
			return s, nil, lineErr(v, name, err)
		}
	}
	return s, vals, nil
}

// check validates the combination of s's fields; at says where to lay an
// error about a field.
func check(s *Settings, at func(field string) (*yaml.Node, string)) error {
	fail := func(f string, err error) error {
		n, name := at(f)
		return lineErr(n, name, err)
	}
	switch {
	case s.Reactor == "" && s.Target == (Target{}):
		return fail("reactor", errors.New("neither reactor nor target (accepted: exactly one of them)"))
	case s.Reactor != "" && s.Target != (Target{}):
		return fail("target", errors.New("both reactor and target (accepted: exactly one of them)"))
	}
	if s.Target != (Target{}) {
		for _, f := range []struct {
			name string
			set  bool
		}{{"callback", s.Callback != ""}, {"budgets", s.Budgets != nil}, {"timer", s.Timer != ""}, {"app_timer", s.AppTimer != 0}, {"workers", s.Workers != 0}} {
			if f.set {
				return fail(f.name, errors.New("reactor-only with a target (accepted: reactor settings only with a reactor)"))
			}
		}
		if len(s.ReactorFaults) > 0 {
			return fail("faults", fmt.Errorf("reactor fault %q with a target (accepted: wire faults only with a target)", s.ReactorFaults[0]))
		}
	}
	switch {
	case s.Steady > 0 && s.Rate == 0:
		return fail("steady", errors.New("steady sources without a rate: an open loop needs one (accepted: rate > 0 with steady)"))
	case s.Steady == 0 && s.Rate > 0:
		return fail("rate", errors.New("a rate without steady sources (accepted: steady >= 1 with a rate)"))
	case s.Hot > 0 && s.InFlight == 0:
		return fail("hot", errors.New("hot sources without inflight (accepted: inflight >= 1 with hot)"))
	case s.Hot == 0 && s.InFlight > 0:
		return fail("inflight", errors.New("inflight without hot sources (accepted: hot >= 1 with inflight)"))
	case s.Hot == 0 && s.Steady == 0 && s.ControlEvery == 0:
		return fail("hot", errors.New("no source (accepted: hot or steady sources, or control_every)"))
	case s.Duration == 0:
		return fail("duration", errors.New("missing or zero (accepted: a duration > 0, e.g. 5s)"))
	}
	lc := s.loadConfig()
	lc.DataAddr = "127.0.0.1:1"
	if err := lc.Validate(); err != nil {
		// The first of the problems, at its field.
		if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
			err = j.Unwrap()[0]
		}
		f := "baseline"
		msg := strings.TrimPrefix(err.Error(), loadgen.ErrConfig.Error()+": ")
		for _, cand := range Fields {
			if strings.HasPrefix(msg, strings.ReplaceAll(cand, "_", "-")+" ") {
				f = cand
			}
		}
		return fail(f, errors.New(msg))
	}
	if s.Reactor != "" {
		rc := reactors.DefaultConfig()
		for _, step := range s.reactorSteps() {
			if err := step.apply(&rc); err != nil {
				return fail(step.field, err)
			}
			if err := rc.Validate(); err != nil {
				return fail(step.field, err)
			}
		}
		// What the design does not take (workers with oneshot), as the
		// serve role checks it, with both addresses the harness sets.
		rc.Listen, rc.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
		if err := designs.ValidateFor(s.Reactor, rc); err != nil {
			return fail("workers", err)
		}
	}
	return nil
}

// cmdLine is the line of the cmd of a target mapping n ({cmd: '...'}), or
// n's own line.
func cmdLine(n *yaml.Node) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "cmd" {
			return n.Content[i+1].Line
		}
	}
	return n.Line
}

// parseFactors decodes the factor list against the baseline, whose target
// command (if any) is at baseAt.
func parseFactors(n *yaml.Node, base *Settings, baseAt position) ([]Factor, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, lineErr(n, "factors", fmt.Errorf("a %s (accepted: a list of {name, values})", kindName(n)))
	}
	var out []Factor
	ids := map[string]int{BaselineID: 0}
	for i, fn := range n.Content {
		what := fmt.Sprintf("factors[%d]", i)
		keys, vals, err := mapping(fn, what, []string{"name", "values"})
		if err != nil {
			return nil, err
		}
		nn, ok := vals["name"]
		if !ok {
			return nil, lineErr(fn, what+".name", fmt.Errorf("missing (accepted: %s)", strings.Join(Fields, ", ")))
		}
		name, err := scalar(nn)
		if err != nil {
			return nil, lineErr(nn, what+".name", err)
		}
		fd, ok := fields[name]
		if !ok {
			return nil, lineErr(nn, what+".name", fmt.Errorf("unknown field %q (accepted: %s)", name, strings.Join(Fields, ", ")))
		}
		if slices.ContainsFunc(out, func(f Factor) bool { return f.Name == name }) {
			return nil, lineErr(nn, what+".name", fmt.Errorf("factor %q given twice (accepted: one factor per field)", name))
		}
		switch {
		case name == "target" && base.Target == (Target{}):
			return nil, lineErr(nn, what+".name", errors.New("target: the baseline runs a reactor (accepted: a factor on reactor, whose values may be designs or {cmd: '...'})"))
		}
		vn, ok := vals["values"]
		if !ok {
			return nil, lineErr(keys["name"], what+".values", errors.New("missing (accepted: a non-empty list)"))
		}
		if vn.Kind != yaml.SequenceNode || len(vn.Content) == 0 {
			return nil, lineErr(vn, what+".values", errors.New("empty or not a list (accepted: a non-empty list of alternative values)"))
		}
		f := Factor{Name: name}
		for j, v := range vn.Content {
			vwhat := fmt.Sprintf("%s.values[%d] (%s)", what, j, name)
			s := base.clone()
			if err := fd.decode(v, &s); err != nil {
				return nil, lineErr(v, vwhat, err)
			}
			if fd.equal(&s, base) {
				return nil, lineErr(v, vwhat, fmt.Errorf("%s equals the baseline's (accepted: a value that differs from it)", fd.text(&s)))
			}
			if err := check(&s, func(string) (*yaml.Node, string) { return v, vwhat }); err != nil {
				return nil, err
			}
			c := Cell{Factor: name, Value: fd.text(&s), Settings: s, at: baseAt}
			if s.Target != (Target{}) && s.Target != base.Target {
				c.at = position{line: cmdLine(v), field: vwhat}
			}
			c.ID = name + "=" + c.Value
			if prev, dup := ids[c.ID]; dup {
				return nil, lineErr(v, vwhat, fmt.Errorf("cell %s repeats line %d's (accepted: distinct values)", c.ID, prev))
			}
			ids[c.ID] = v.Line
			f.Cells = append(f.Cells, c)
		}
		out = append(out, f)
	}
	return out, nil
}
