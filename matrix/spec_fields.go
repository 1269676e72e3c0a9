package matrix

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/cost"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/target"
)

// Fields lists the baseline fields a factor may name, in the order Parse
// reads them.
var Fields = []string{
	"reactor", "target", "hot", "inflight", "steady", "rate", "arrivals", "control_every", "control", "control_timeout", "removal_after", "stop_at",
	"urgent_every", "churn_rate", "churn_burst", "churn_max", "hot_lead", "callback", "workers", "budgets", "timer", "app_timer",
	"control_sched", "admission", "urgent", "loops", "assign", "exclusive",
	"faults", "server_cpu", "cpus", "loadgen_loops", "duration", "warmup",
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
			d, err := designs.Parse(v)
			s.Reactor, s.Target = d, Target{}
			return err
		},
		equal: func(a, b *Settings) bool { return a.Reactor == b.Reactor && a.Target == b.Target },
		text:  func(s *Settings) string { return s.serverSpec().String() },
	},
	"target": {
		decode: decodeTarget,
		equal:  func(a, b *Settings) bool { return a.Target == b.Target },
		text:   func(s *Settings) string { return s.Target.Spec().String() },
	},
	"hot":      intField(func(s *Settings) *int { return &s.Hot }),
	"inflight": intField(func(s *Settings) *int { return &s.InFlight }),
	"steady":   intField(func(s *Settings) *int { return &s.Steady }),
	"rate":     rateField("frames/s", func(s *Settings) *float64 { return &s.Rate }),
	// arrivals is the steady sources' arrival process (loadgen's
	// Arrivals); absent, and "fixed", is the fixed timetable.
	"arrivals": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			if v != loadgen.ArrivalsFixed && v != loadgen.ArrivalsPoisson {
				return fmt.Errorf("%q (accepted: %s or %s)", v, loadgen.ArrivalsFixed, loadgen.ArrivalsPoisson)
			}
			s.Arrivals = v
			return nil
		},
		equal: func(a, b *Settings) bool { return a.arrivals() == b.arrivals() },
		text:  func(s *Settings) string { return s.arrivals() },
	},
	"churn_rate": rateField("connections/s", func(s *Settings) *float64 { return &s.ChurnRate }),
	// churn_burst and churn_max: 0 (absent) is loadgen's default with
	// churn; loadgen refuses them without churn_rate.
	"churn_burst": intField(func(s *Settings) *int { return &s.ChurnBurst }),
	"churn_max":   intField(func(s *Settings) *int { return &s.ChurnMax }),
	"hot_lead":    durField(func(s *Settings) *time.Duration { return &s.HotLead }),
	// loops, assign and exclusive pass through to the serve flags of the
	// same names; a design that does not take them refuses them (check).
	"loops":         intField(func(s *Settings) *int { return &s.Loops }),
	"assign":        passThroughField("assign", func(s *Settings) *string { return &s.Assign }),
	"exclusive":     passThroughField("exclusive", func(s *Settings) *string { return &s.Exclusive }),
	"control_every": durField(func(s *Settings) *time.Duration { return &s.ControlEvery }),
	// control is the number of control connections, each with its PING
	// every control_every (absent: 1); it compares and prints as its
	// effective value.
	"control": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			k, err := strconv.Atoi(v)
			if err != nil || k < 1 || k > loadgen.MaxSources {
				return fmt.Errorf("%q is not a number of control connections (accepted: 1..%d; leave it out for 1)", v, loadgen.MaxSources)
			}
			s.Control = k
			return nil
		},
		equal: func(a, b *Settings) bool { return a.controlConns() == b.controlConns() },
		text:  func(s *Settings) string { return strconv.Itoa(s.controlConns()) },
	},
	// control_timeout and removal_after are the health check's (absent:
	// loadgen's defaults); they compare and print as their effective
	// values, so writing the default is the same as leaving it out.
	"control_timeout": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%q is not a timeout (accepted: a duration > 0 with a unit, e.g. 10ms; leave it out for the default %v)", v, loadgen.DefaultControlTimeout)
			}
			s.ControlTimeout = d
			return nil
		},
		equal: func(a, b *Settings) bool { return a.controlTimeout() == b.controlTimeout() },
		text:  func(s *Settings) string { return strings.ReplaceAll(s.controlTimeout().String(), "µ", "u") },
	},
	"removal_after": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			k, err := strconv.Atoi(v)
			if err != nil || k < 1 {
				return fmt.Errorf("%q is not a count of timeouts in a row (accepted: an integer >= 1; leave it out for the default %d)", v, loadgen.DefaultRemovalAfter)
			}
			s.RemovalAfter = k
			return nil
		},
		equal: func(a, b *Settings) bool { return a.removalAfter() == b.removalAfter() },
		text:  func(s *Settings) string { return strconv.Itoa(s.removalAfter()) },
	},
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
			if err := harness.CheckServerCPU(c); err != nil {
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
			c, err := harness.ParseCPUs(v)
			if err != nil {
				return err
			}
			s.CPUs = c.String()
			return nil
		},
		equal: func(a, b *Settings) bool { return a.CPUs == b.CPUs },
		text: func(s *Settings) string {
			if s.CPUs == "" {
				return "as --cpus"
			}
			return s.CPUs
		},
	},
	"loadgen_loops": {
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			k, err := strconv.Atoi(v)
			if err != nil || k < 0 || k > loadgen.MaxLoops {
				return fmt.Errorf("%q is not a number of event loops (accepted: 1..%d; 0 or left out: one per CPU of the load generator's set)", v, loadgen.MaxLoops)
			}
			s.LoadgenLoops = k
			return nil
		},
		equal: func(a, b *Settings) bool { return a.LoadgenLoops == b.LoadgenLoops },
		text: func(s *Settings) string {
			if s.LoadgenLoops == 0 {
				return "one per CPU"
			}
			return strconv.Itoa(s.LoadgenLoops)
		},
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
	"app_timer":    durField(func(s *Settings) *time.Duration { return &s.AppTimer }),
	"workers":      intField(func(s *Settings) *int { return &s.Workers }),
	"urgent_every": durField(func(s *Settings) *time.Duration { return &s.UrgentEvery }),
	// control_sched, admission and urgent pass through to the serve flags
	// of the same names; they compare and print as their effective values
	// (the flag's default when absent).
	"control_sched": passThroughField("control_sched", func(s *Settings) *string { return &s.ControlSched }),
	"admission":     passThroughField("admission", func(s *Settings) *string { return &s.Admission }),
	"urgent":        passThroughField("urgent", func(s *Settings) *string { return &s.Urgent }),
	"duration":      durField(func(s *Settings) *time.Duration { return &s.Duration }),
	"warmup":        durField(func(s *Settings) *time.Duration { return &s.Warmup }),
}

// controlTimeout is s's health check timeout, loadgen's default if unset.
func (s *Settings) controlTimeout() time.Duration {
	if s.ControlTimeout == 0 {
		return loadgen.DefaultControlTimeout
	}
	return s.ControlTimeout
}

// removalAfter is s's K, loadgen's default if unset.
// controlConns is the number of control connections the cell opens when
// it has control probes.
func (s *Settings) controlConns() int {
	return max(s.Control, 1)
}

func (s *Settings) removalAfter() int {
	if s.RemovalAfter == 0 {
		return loadgen.DefaultRemovalAfter
	}
	return s.RemovalAfter
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

// rateField is a rate of unit (frames/s, connections/s): a number >= 0.
func rateField(unit string, p func(*Settings) *float64) field {
	return field{
		decode: func(n *yaml.Node, s *Settings) error {
			v, err := scalar(n)
			if err != nil {
				return err
			}
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
				return fmt.Errorf("%q is not a rate (accepted: a number >= 0 of %s)", v, unit)
			}
			*p(s) = r
			return nil
		},
		equal: func(a, b *Settings) bool { return *p(a) == *p(b) },
		text:  func(s *Settings) string { return strconv.FormatFloat(*p(s), 'g', -1, 64) },
	}
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

// Spec is t as a target: the command, the value cmd:COMMAND names on the
// command line (target.Parse).
func (t Target) Spec() target.Spec { return target.Command(t.Cmd) }

// serverSpec is what serves s as a target: the black-box command when
// Target is set and Reactor is not, else the reference design (the zero
// Spec when neither is).
func (s *Settings) serverSpec() target.Spec {
	if s.Reactor == "" && s.Target != (Target{}) {
		return s.Target.Spec()
	}
	return target.Design(string(s.Reactor))
}

// decodeTarget decodes a mapping {cmd: '...'}, the YAML form of a
// black-box target, into s.Target.
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

// arrivals is the arrival process, "fixed" when none is set.
func (s *Settings) arrivals() string {
	if s.Arrivals == "" {
		return loadgen.ArrivalsFixed
	}
	return s.Arrivals
}
