package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

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
	if base.Target.IsCommand() {
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
	if s.Target.IsZero() {
		return fail("reactor", errors.New("neither reactor nor target (accepted: exactly one of them)"))
	}
	if s.Target.IsCommand() {
		for _, f := range []struct {
			name string
			set  bool
		}{{"callback", s.Callback != ""}, {"budgets", s.Budgets != nil}, {"timer", s.Timer != ""}, {"app_timer", s.AppTimer != 0}, {"workers", s.Workers != 0},
			{"control_sched", s.ControlSched != ""}, {"admission", s.Admission != ""}, {"urgent", s.Urgent != ""},
			{"loops", s.Loops != 0}, {"assign", s.Assign != ""}, {"exclusive", s.Exclusive != ""}} {
			if f.set {
				return fail(f.name, errors.New("reactor-only with a target (accepted: reactor settings only with a reactor)"))
			}
		}
		if len(s.ReactorFaults) > 0 {
			return fail("faults", fmt.Errorf("reactor fault %q with a target (accepted: wire faults only with a target)", s.ReactorFaults[0]))
		}
	}
	switch {
	case s.Load.Steady > 0 && s.Load.Rate == 0:
		return fail("steady", errors.New("steady sources without a rate: an open loop needs one (accepted: rate > 0 with steady)"))
	case s.Load.Steady == 0 && s.Load.Rate > 0:
		return fail("rate", errors.New("a rate without steady sources (accepted: steady >= 1 with a rate)"))
	case s.Load.Hot > 0 && s.Load.InFlight == 0:
		return fail("hot", errors.New("hot sources without inflight (accepted: inflight >= 1 with hot)"))
	case s.Load.Hot == 0 && s.Load.InFlight > 0:
		return fail("inflight", errors.New("inflight without hot sources (accepted: hot >= 1 with inflight)"))
	case s.Load.Hot == 0 && s.Load.Steady == 0 && s.Load.ControlEvery == 0 && s.Load.ChurnRate == 0:
		return fail("hot", errors.New("no source (accepted: hot or steady sources, control_every, or churn_rate)"))
	case s.Load.Duration == 0:
		return fail("duration", errors.New("missing or zero (accepted: a duration > 0, e.g. 5s)"))
	case s.Load.ControlEvery == 0 && s.Load.ControlTimeout != 0:
		return fail("control_timeout", errors.New("a health check timeout without control probes (accepted: control_every > 0 with control_timeout)"))
	case s.Load.ControlEvery == 0 && s.Load.Control != 0:
		return fail("control", errors.New("control connections without control probes (accepted: control_every > 0 with control)"))
	case s.Load.ControlEvery == 0 && s.Load.RemovalAfter != 0:
		return fail("removal_after", errors.New("a health check's removal count without control probes (accepted: control_every > 0 with removal_after)"))
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
		for _, k := range loadgen.Knobs {
			if k.Spec != nil && strings.HasPrefix(msg, k.ValidatedName()+" ") {
				f = k.Name
			}
		}
		return fail(f, errors.New(msg))
	}
	if s.Target.IsDesign() {
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
		if err := designs.ValidateFor(s.design(), rc); err != nil {
			return fail(s.refusedBy(), err)
		}
	}
	return nil
}

// refusedBy names the reactor setting that made the design refuse s (the
// first step after which designs.ValidateFor refuses it), or "reactor"
// when the design refuses its defaults.
func (s *Settings) refusedBy() string {
	rc := reactors.DefaultConfig()
	rc.Listen, rc.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
	if designs.ValidateFor(s.design(), rc) != nil {
		return "reactor"
	}
	for _, step := range s.reactorSteps() {
		if step.apply(&rc) != nil || designs.ValidateFor(s.design(), rc) != nil {
			return step.field
		}
	}
	return "reactor"
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
		case name == "target" && !base.Target.IsCommand():
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
			if s.Target.IsCommand() && s.Target != base.Target {
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
