package matrix

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/target"
)

// Fields lists the baseline fields a factor may name, in the order Parse
// reads them: what serves, the traffic's load knobs (loadgen.SpecKnobs of
// loadgen.GroupTraffic, in their table's order), the reactor's settings,
// the faults and the placement, then the run's load knobs (GroupRun).
var Fields = slices.Concat(
	[]string{"reactor", "target"},
	knobNames(loadgen.GroupTraffic),
	[]string{"callback", "workers", "budgets", "timer", "app_timer", "control_sched", "admission", "urgent", "loops", "assign", "exclusive",
		"ring_buffers", "faults", "server_cpu", "cpus"},
	knobNames(loadgen.GroupRun),
)

// knobNames are the names of the spec knobs of group g.
func knobNames(g loadgen.Group) []string {
	var out []string
	for _, k := range loadgen.SpecKnobs(g) {
		out = append(out, k.Name)
	}
	return out
}

// field decodes, compares and prints one baseline field; unset, when not
// nil, says a manifest leaves it out (see unsetFields).
type field struct {
	decode func(n *yaml.Node, s *Settings) error
	equal  func(a, b *Settings) bool
	text   func(s *Settings) string
	unset  func(s *Settings) bool
}

// fields are the baseline fields by name: those of the map below, and one
// per spec knob of loadgen.Knobs (knobField).
var fields = func() map[string]field {
	m := maps.Clone(otherFields)
	for _, k := range loadgen.Knobs {
		if k.Spec != nil {
			m[k.Name] = knobField(k)
		}
	}
	return m
}()

// knobField is a load knob as a spec field: decoded, compared and printed
// as its loadgen.SpecRule says, and left out of a manifest where the rule
// omits its default.
func knobField(k loadgen.Knob) field {
	f := field{
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			return k.ParseSpec(v, &s.Load)
		},
		equal: func(a, b *Settings) bool { return k.Equal(&a.Load, &b.Load) },
		text:  func(s *Settings) string { return k.Text(&s.Load) },
	}
	if k.Spec.OmitDefault {
		f.unset = func(s *Settings) bool { return k.IsDefault(&s.Load) }
	}
	return f
}

// otherFields are the baseline fields that are not load knobs.
var otherFields = map[string]field{
	// reactor is what serves: a reference design, or (a mapping {cmd: …},
	// as target takes) a black-box command in its place, so that one
	// factor can set reference reactors and third-party servers side by
	// side.
	"reactor": {
		decode: func(n *yaml.Node, s *Settings) error {
			if n.Kind == yaml.MappingNode {
				return decodeTarget(n, s)
			}
			v, err := scalar(n)
			if err != nil {
				return fmt.Errorf("%w (or a mapping {cmd: '...'} for a black-box server)", err)
			}
			d, err := designs.Parse(v)
			if err != nil {
				return err
			}
			s.Target = target.Design(d)
			return nil
		},
		equal: func(a, b *Settings) bool { return a.Target == b.Target },
		text:  func(s *Settings) string { return s.Target.String() },
	},
	// target is a black-box command ({cmd: …}) only; its text is the
	// command's, cmd:COMMAND, and "" for a design.
	"target": {
		decode: decodeTarget,
		equal:  func(a, b *Settings) bool { return a.Target.Command() == b.Target.Command() },
		text:   func(s *Settings) string { return target.Command(s.Target.Command()).String() },
	},
	// loops, assign and exclusive pass through to the serve flags of the
	// same names; a design that does not take them refuses them (check).
	"loops":     intField(func(s *Settings) *int { return &s.Loops }),
	"assign":    passThroughField("assign", func(s *Settings) *string { return &s.Assign }),
	"exclusive": passThroughField("exclusive", func(s *Settings) *string { return &s.Exclusive }),
	// ring_buffers is serve --ring-buffers: the provided buffer ring's
	// count on each loop of a completion design, which the reactor's own
	// validation holds to a power of two, 1..32768 (check, at the field).
	"ring_buffers": intField(func(s *Settings) *int { return &s.RingBuffers }),
	"server_cpu": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			c, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("%q is not a CPU cap (accepted: a number of CPUs, %v..%d, e.g. 0.5; 0 for none)", v, proc.MinCPUShare, proc.MaxCPUShare)
			}
			if err := lab.CheckServerCPU(c); err != nil {
				return fmt.Errorf("%q: %w", v, err)
			}
			s.ServerCPU = c
			return nil
		},
		equal: func(a, b *Settings) bool { return a.ServerCPU == b.ServerCPU },
		text:  func(s *Settings) string { return strconv.FormatFloat(s.ServerCPU, 'g', -1, 64) },
	},
	"cpus": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			c, err := lab.ParsePlacement(v)
			if err != nil {
				return err
			}
			s.Placement = c.String()
			return nil
		},
		equal: func(a, b *Settings) bool { return a.Placement == b.Placement },
		text: func(s *Settings) string {
			if s.Placement == "" {
				return "as --cpus"
			}
			return s.Placement
		},
	},
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
	// control_sched, admission and urgent pass through to the serve flags
	// of the same names; they compare and print as their effective values
	// (the flag's default when absent).
	"control_sched": passThroughField("control_sched", func(s *Settings) *string { return &s.ControlSched }),
	"admission":     passThroughField("admission", func(s *Settings) *string { return &s.Admission }),
	"urgent":        passThroughField("urgent", func(s *Settings) *string { return &s.Urgent }),
}

// controlConns is the number of control connections the cell opens when
// it has control probes.
func (s *Settings) controlConns() int {
	return max(s.Load.Control, 1)
}

// passThroughField is a reactor setting given to the serve flag of the
// field's name (serveFlag) as written: decoding checks it as the flag
// does, and refuses it, naming the flag's accepted forms, if the flag
// refuses it (or does not exist in this build).
func passThroughField(name string, p func(*Settings) *string) field {
	return field{
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			rc := reactors.DefaultConfig()
			fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			rc.Flags(fs)
			f := fs.Lookup(serveFlag(name))
			if f == nil {
				return fmt.Errorf("%q: this build's reactors have no --%s flag", v, serveFlag(name))
			}
			_, usage := flag.UnquoteUsage(f)
			if v == "" {
				return fmt.Errorf("empty (accepted: %s; leave it out for the default %s)", usage, f.DefValue)
			}
			if err := fs.Set(f.Name, v); err != nil {
				return fmt.Errorf("%q: %v (accepted: %s)", v, err, usage)
			}
			*p(s) = v
			return nil
		},
		equal: func(a, b *Settings) bool { return passThroughText(name, *p(a)) == passThroughText(name, *p(b)) },
		text:  func(s *Settings) string { return passThroughText(name, *p(s)) },
	}
}

// passThroughText is v, or the serve flag's default when v is "".
func passThroughText(name, v string) string {
	if v != "" {
		return v
	}
	rc := reactors.DefaultConfig()
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	rc.Flags(fs)
	if f := fs.Lookup(serveFlag(name)); f != nil {
		return f.DefValue
	}
	return "default"
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

// design is the reference design s runs; "" for a command.
func (s *Settings) design() reactors.DesignName { return reactors.DesignName(s.Target.Design()) }

// decodeTarget decodes a mapping {cmd: '...'} or {cmd: '...', label:
// NAME}, the YAML form of a black-box target, into s.Target, a command,
// and s.Label. A label that does not read is refused with an error
// located at its line (the caller names the field).
func decodeTarget(n *yaml.Node, s *Settings) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("a %s (accepted: a mapping {cmd: '...'}, with a label: NAME if you like)", kindName(n))
	}
	var t target.Spec
	label := ""
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != "cmd" && k.Value != "label" {
			return lineErr(k, "target."+k.Value, errors.New("unknown key (accepted: cmd, label)"))
		}
		if seen[k.Value] {
			return lineErr(k, "target."+k.Value, errors.New("given twice"))
		}
		seen[k.Value] = true
		if k.Value == "label" {
			l, err := decodeLabel(v)
			if err != nil {
				return &posError{line: v.Line, err: err}
			}
			label = l
			continue
		}
		c, err := scalar(v)
		if err != nil {
			return lineErr(v, "target.cmd", err)
		}
		if c == "" {
			return lineErr(v, "target.cmd", errors.New("empty (accepted: a shell command)"))
		}
		t = target.Command(c)
	}
	if !seen["cmd"] {
		return errors.New("no cmd (accepted: a mapping {cmd: '...'})")
	}
	s.Target, s.Label = t, label
	return nil
}

// MaxLabel bounds the length of a cell's label (Settings.Label).
const MaxLabel = 40

// labelRE is what a label may be: a run directory's path and a benchmark
// name keep it as it is (matrix's runDir, results.BenchValue).
var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// labelAccepted says what labelRE and MaxLabel accept.
var labelAccepted = fmt.Sprintf("a name of letters, digits, '.', '_', '-', starting with a letter or digit, at most %d characters, e.g. gnet", MaxLabel)

// decodeLabel reads a label (see Settings.Label).
func decodeLabel(n *yaml.Node) (string, error) {
	v, err := scalar(n)
	if err != nil {
		return "", fmt.Errorf("label: %w", err)
	}
	switch {
	case v == "":
		return "", fmt.Errorf("label: empty (accepted: %s; leave it out to name the cell by its command)", labelAccepted)
	case len(v) > MaxLabel || !labelRE.MatchString(v):
		return "", fmt.Errorf("label %q (accepted: %s)", v, labelAccepted)
	}
	return v, nil
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
		// Placed as reactorlab run places a --fault; a reactor fault with
		// a target is refused by check, which sees the whole cell.
		var rf reactors.Faults
		w, err := harness.SplitFault(v, true, &rf)
		switch {
		case err != nil:
			return lineErr(it, name, err)
		case w != "":
			wire = append(wire, w) // canonical, so equal faults compare equal
		default:
			react = append(react, v)
		}
	}
	s.WireFaults, s.ReactorFaults = wire, react
	return nil
}
