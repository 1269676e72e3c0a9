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
// and returns key and value nodes by key: the allowed keys, each as first
// given. Every unknown key and every repeat is added to errs, and clean
// is false: a key the caller finds missing may then be the one misspelt,
// and is not reported apart. ok is false, with nothing returned, when n
// is no mapping at all.
func mapping(n *yaml.Node, what string, allowed []string, errs *problems) (keys, vals map[string]*yaml.Node, ok, clean bool) {
	if n.Kind != yaml.MappingNode {
		errs.add(lineErr(n, what, fmt.Errorf("a %s (accepted: a mapping of %s)", kindName(n), strings.Join(allowed, ", "))))
		return nil, nil, false, false
	}
	before := len(*errs)
	keys, vals = map[string]*yaml.Node{}, map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		if what != "spec" {
			name = what + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode || !slices.Contains(allowed, k.Value) {
			errs.add(lineErr(k, name, fmt.Errorf("unknown key (accepted: %s)", strings.Join(allowed, ", "))))
			continue
		}
		if _, dup := keys[k.Value]; dup {
			errs.add(lineErr(k, name, errors.New("given twice")))
			continue
		}
		keys[k.Value], vals[k.Value] = k, v
	}
	return keys, vals, true, len(*errs) == before
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Parse reads a spec from YAML and validates it (see Spec for what holds
// of the result). Errors wrap ErrSpec and read "line N: field: problem";
// a spec with several is refused with an Errors holding each (see
// Errors for which are found together). Anchors and aliases are refused;
// only the first YAML document is read.
func Parse(data []byte) (*Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(data, err)
	}
	var errs problems
	spec := parseDoc(&doc, &errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return spec, nil
}

// MaxSuiteSpecs bounds the number of specs in one suite.
const MaxSuiteSpecs = 64

// ParseSuite reads a suite: one or more specs, each a YAML document
// ("---" between them), each as Parse reads it, with line numbers counted
// from the start of data. Spec names are unique within the suite. The
// result holds at least one spec. The errors of every document are
// reported together, as Parse reports one's (Errors), but for a YAML
// syntax error: the documents after it cannot be read, and it is the one
// error.
func ParseSuite(data []byte) ([]*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*Spec
	var errs problems
	names := map[string]int{}
	docs := 0
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlError(data, err)
		}
		if docs == MaxSuiteSpecs {
			errs.add(lineErr(&doc, "suite", fmt.Errorf("more than %d specs (accepted: at most %d documents)", MaxSuiteSpecs, MaxSuiteSpecs)))
			break
		}
		docs++
		before := len(errs)
		spec := parseDoc(&doc, &errs)
		if spec.Name != "" {
			if prev, dup := names[spec.Name]; dup {
				errs.add(lineErr(&doc, "name", fmt.Errorf("%q is also the name of the spec at line %d (accepted: one name per spec of a suite)", spec.Name, prev)))
			} else {
				names[spec.Name] = doc.Line
			}
		}
		if len(errs) == before {
			out = append(out, spec)
		}
	}
	if docs == 0 {
		errs.add(&posError{line: 1, field: "spec", err: errors.New("empty (accepted: a mapping of name, baseline, repeats, factors)")})
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseDoc reads one YAML document as a spec, adding each error it finds
// to errs. The spec it returns is whole only when it added none; its Name
// is set whenever the name could be read.
func parseDoc(doc *yaml.Node, errs *problems) *Spec {
	spec := &Spec{Repeats: DefaultRepeats}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		errs.add(&posError{line: 1, field: "spec", err: errors.New("empty (accepted: a mapping of name, baseline, repeats, factors)")})
		return spec
	}
	if n := findAlias(doc); n != nil {
		errs.add(lineErr(n, "spec", errors.New("anchors and aliases are not supported (accepted: plain YAML)")))
		return spec
	}
	root := doc.Content[0]
	keys, vals, ok, clean := mapping(root, "spec", []string{"name", "baseline", "repeats", "factors"}, errs)
	if !ok {
		return spec
	}
	if n, ok := vals["name"]; !ok {
		if clean {
			errs.add(lineErr(root, "name", errors.New("missing (accepted: a name of letters, digits, '.', '_', '-')")))
		}
	} else if name, err := scalar(n); err != nil {
		errs.add(lineErr(n, "name", err))
	} else if !nameRE.MatchString(name) {
		errs.add(lineErr(n, "name", fmt.Errorf("%q (accepted: letters, digits, '.', '_', '-', starting with a letter or digit)", name)))
	} else {
		spec.Name = name
	}
	if n, ok := vals["repeats"]; ok {
		if v, err := scalar(n); err != nil {
			errs.add(lineErr(n, "repeats", err))
		} else if r, err := strconv.Atoi(v); err != nil || r < 1 || r > MaxRepeats {
			errs.add(lineErr(n, "repeats", fmt.Errorf("%q (accepted: 1..%d)", v, MaxRepeats)))
		} else {
			spec.Repeats = r
		}
	}
	bn, ok := vals["baseline"]
	if !ok {
		if clean {
			errs.add(lineErr(root, "baseline", errors.New("missing (accepted: a mapping of "+strings.Join(Fields, ", ")+")")))
		}
		return spec
	}
	// The rules of the baseline's combination are checked on the fields
	// that read; what builds on the whole baseline (the load generator's
	// and the reactor's validation, the factors measured against it) only
	// on a baseline without an error.
	before := len(*errs)
	base, lines, unknown, isMapping := parseBaseline(bn, errs)
	spec.Baseline = base
	if base.Target.IsCommand() {
		for _, f := range []string{"reactor", "target"} {
			if n, ok := lines[f]; ok && n.Kind == yaml.MappingNode {
				spec.baseAt = position{line: cmdLine(n), field: f + ".cmd"}
			}
		}
	}
	if isMapping {
		check(&base, func(f string) (*yaml.Node, string) {
			if l, ok := lines[f]; ok {
				return l, f
			}
			return keys["baseline"], "baseline." + f
		}, unknown, errs)
	}
	baseRead := len(*errs) == before
	if fn, ok := vals["factors"]; ok {
		spec.Factors = parseFactors(fn, &base, spec.baseAt, baseRead, errs)
	}
	return spec
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

// parseBaseline decodes the baseline's fields, adding each error to errs,
// and returns the value node of each field given and the fields whose
// value is not known: those that did not read, reactor and target when
// both are given, and, when a key was unknown (perhaps a field
// misspelt), every field not given. isMapping is false, with nothing
// else returned, when the baseline is no mapping.
func parseBaseline(n *yaml.Node, errs *problems) (s Settings, vals map[string]*yaml.Node, unknown map[string]bool, isMapping bool) {
	_, vals, ok, clean := mapping(n, "baseline", Fields, errs)
	if !ok {
		return s, nil, nil, false
	}
	unknown = map[string]bool{}
	// A load knob left out is run's default where its rule says so
	// (duration, warmup), else zero: loadgen's table decides.
	s.Load = loadgen.SpecDefaults()
	if _, ok := vals["reactor"]; ok {
		if v, ok := vals["target"]; ok {
			errs.add(lineErr(v, "target", errors.New("both reactor and target (accepted: exactly one of them)")))
			unknown["reactor"], unknown["target"] = true, true
		}
	}
	for _, name := range Fields {
		v, ok := vals[name]
		if !ok {
			unknown[name] = !clean
			continue
		}
		if err := fields[name].decode(v, &s); err != nil {
			errs.add(lineErr(v, name, err))
			unknown[name] = true
		}
		if s.Label != "" {
			errs.add(lineErr(keyValue(v, "label"), name, fmt.Errorf("label %q in the baseline, whose cell is named baseline (accepted: a label in a factor's values, {cmd: '...', label: NAME})", s.Label)))
			s.Label = ""
		}
	}
	return s, vals, unknown, true
}

// check validates the combination of s's fields, adding each error to
// errs; at says where to lay an error about a field. Independent rules
// are each checked, those that read a field in unknown (whose value is
// not known: it did not read) left out; a check that depends on others
// passing (the load generator's and the reactor's own validation, on a
// load and settings whose combination holds) only when they did and
// every field is known.
func check(s *Settings, at func(field string) (*yaml.Node, string), unknown map[string]bool, errs *problems) {
	before := len(*errs)
	fail := func(f string, err error) {
		n, name := at(f)
		errs.add(lineErr(n, name, err))
	}
	known := func(fields ...string) bool {
		for _, f := range fields {
			if unknown[f] {
				return false
			}
		}
		return true
	}
	if s.Target.IsZero() && known("reactor", "target") {
		fail("reactor", errors.New("neither reactor nor target (accepted: exactly one of them)"))
	}
	if s.Target.IsCommand() && known("reactor", "target") {
		for _, f := range []struct {
			name string
			set  bool
		}{{"callback", s.Callback != ""}, {"budgets", s.Budgets != nil}, {"timer", s.Timer != ""}, {"app_timer", s.AppTimer != 0}, {"workers", s.Workers != 0},
			{"control_sched", s.ControlSched != ""}, {"admission", s.Admission != ""}, {"urgent", s.Urgent != ""},
			{"loops", s.Loops != 0}, {"assign", s.Assign != ""}, {"exclusive", s.Exclusive != ""}, {"ring_buffers", s.RingBuffers != 0}} {
			if f.set {
				fail(f.name, errors.New("reactor-only with a target (accepted: reactor settings only with a reactor)"))
			}
		}
		if len(s.ReactorFaults) > 0 {
			fail("faults", fmt.Errorf("reactor fault %q with a target (accepted: wire faults only with a target)", s.ReactorFaults[0]))
		}
	}
	// The sources: an open loop's pair, a closed loop's pair, and, only
	// when both hold, whether there is any source at all.
	sources := len(*errs)
	switch {
	case !known("steady", "rate"):
	case s.Load.Steady > 0 && s.Load.Rate == 0:
		fail("steady", errors.New("steady sources without a rate: an open loop needs one (accepted: rate > 0 with steady)"))
	case s.Load.Steady == 0 && s.Load.Rate > 0:
		fail("rate", errors.New("a rate without steady sources (accepted: steady >= 1 with a rate)"))
	}
	switch {
	case !known("hot", "inflight"):
	case s.Load.Hot > 0 && s.Load.InFlight == 0:
		fail("hot", errors.New("hot sources without inflight (accepted: inflight >= 1 with hot)"))
	case s.Load.Hot == 0 && s.Load.InFlight > 0:
		fail("inflight", errors.New("inflight without hot sources (accepted: hot >= 1 with inflight)"))
	}
	if len(*errs) == sources && known("hot", "inflight", "steady", "rate", "control_every", "churn_rate") &&
		s.Load.Hot == 0 && s.Load.Steady == 0 && s.Load.ControlEvery == 0 && s.Load.ChurnRate == 0 {
		fail("hot", errors.New("no source (accepted: hot or steady sources, control_every, or churn_rate)"))
	}
	if s.Load.Duration == 0 && known("duration") {
		fail("duration", fmt.Errorf("zero (accepted: a duration > 0, e.g. 5s; left out, run's default %v)", loadgen.SpecDefaults().Duration))
	}
	if s.Load.ControlEvery == 0 && known("control_every") {
		if s.Load.ControlTimeout != 0 {
			fail("control_timeout", errors.New("a health check timeout without control probes (accepted: control_every > 0 with control_timeout)"))
		}
		if s.Load.Control != 0 {
			fail("control", errors.New("control connections without control probes (accepted: control_every > 0 with control)"))
		}
		if s.Load.RemovalAfter != 0 {
			fail("removal_after", errors.New("a health check's removal count without control probes (accepted: control_every > 0 with removal_after)"))
		}
	}
	if len(*errs) > before || !known(Fields...) {
		return
	}
	lc := s.loadConfig()
	lc.DataAddr = "127.0.0.1:1"
	if err := lc.Validate(); err != nil {
		// Each of the problems, at its field.
		all := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
			all = j.Unwrap()
		}
		for _, err := range all {
			f := "baseline"
			msg := strings.TrimPrefix(err.Error(), loadgen.ErrConfig.Error()+": ")
			for _, k := range loadgen.Knobs {
				if k.Spec != nil && strings.HasPrefix(msg, k.ValidatedName()+" ") {
					f = k.Name
				}
			}
			fail(f, errors.New(msg))
		}
	}
	if s.Target.IsDesign() {
		// Each step builds on the configuration the ones before left:
		// the first refused ends the check.
		rc := reactors.DefaultConfig()
		for _, step := range s.reactorSteps() {
			if err := step.apply(&rc); err != nil {
				fail(step.field, err)
				return
			}
			if err := rc.Validate(); err != nil {
				fail(step.field, err)
				return
			}
		}
		// What the design does not take (workers with oneshot), as the
		// serve role checks it, with both addresses the harness sets.
		rc.Listen, rc.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
		if err := designs.ValidateFor(s.design(), rc); err != nil {
			fail(s.refusedBy(), err)
		}
	}
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
func cmdLine(n *yaml.Node) int { return keyValue(n, "cmd").Line }

// keyValue is the value of key in the mapping n, or n itself when n is no
// mapping or has no such key.
func keyValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	}
	return n
}

// parseFactors decodes the factor list against the baseline, whose target
// command (if any) is at baseAt, adding each error to errs: every
// factor's and every value's. What is measured against the baseline (a
// factor on target, a value equal to the baseline's, the cell's
// combination of fields) is checked only when baseRead says the baseline
// read and checked without error; a factor whose name cannot be read has
// its values left unread.
func parseFactors(n *yaml.Node, base *Settings, baseAt position, baseRead bool, errs *problems) []Factor {
	if n.Kind != yaml.SequenceNode {
		errs.add(lineErr(n, "factors", fmt.Errorf("a %s (accepted: a list of {name, values})", kindName(n))))
		return nil
	}
	var out []Factor
	named := map[string]bool{}
	ids := map[string]int{BaselineID: 0}
	for i, fn := range n.Content {
		what := fmt.Sprintf("factors[%d]", i)
		keys, vals, ok, clean := mapping(fn, what, []string{"name", "values"}, errs)
		if !ok {
			continue
		}
		nn, ok := vals["name"]
		if !ok {
			if clean {
				errs.add(lineErr(fn, what+".name", fmt.Errorf("missing (accepted: %s)", strings.Join(Fields, ", "))))
			}
			continue
		}
		name, err := scalar(nn)
		if err != nil {
			errs.add(lineErr(nn, what+".name", err))
			continue
		}
		fd, ok := fields[name]
		if !ok {
			errs.add(lineErr(nn, what+".name", fmt.Errorf("unknown field %q (accepted: %s)", name, strings.Join(Fields, ", "))))
			continue
		}
		if named[name] {
			errs.add(lineErr(nn, what+".name", fmt.Errorf("factor %q given twice (accepted: one factor per field)", name)))
			continue
		}
		named[name] = true
		if baseRead && name == "target" && !base.Target.IsCommand() {
			errs.add(lineErr(nn, what+".name", errors.New("target: the baseline runs a reactor (accepted: a factor on reactor, whose values may be designs or {cmd: '...'})")))
			continue
		}
		vn, ok := vals["values"]
		if !ok {
			if clean {
				errs.add(lineErr(keys["name"], what+".values", errors.New("missing (accepted: a non-empty list)")))
			}
			continue
		}
		if vn.Kind != yaml.SequenceNode || len(vn.Content) == 0 {
			errs.add(lineErr(vn, what+".values", errors.New("empty or not a list (accepted: a non-empty list of alternative values)")))
			continue
		}
		f := Factor{Name: name}
		// Where each label and each value was first given, so that two
		// values of the factor never share a label nor run the same.
		labels, values := map[string]int{}, map[string]int{}
		for j, v := range vn.Content {
			vwhat := fmt.Sprintf("%s.values[%d] (%s)", what, j, name)
			s := base.clone()
			if err := fd.decode(v, &s); err != nil {
				errs.add(lineErr(v, vwhat, err))
				continue
			}
			if !baseRead {
				continue
			}
			if fd.equal(&s, base) {
				errs.add(lineErr(v, vwhat, fmt.Errorf("%s equals the baseline's (accepted: a value that differs from it)", fd.text(&s))))
				continue
			}
			before := len(*errs)
			check(&s, func(string) (*yaml.Node, string) { return v, vwhat }, nil, errs)
			if len(*errs) > before {
				continue
			}
			c := Cell{Factor: name, Value: fd.text(&s), Settings: s, at: baseAt}
			if s.Target.IsCommand() && s.Target != base.Target {
				c.at = position{line: cmdLine(v), field: vwhat}
			}
			if prev, dup := labels[s.Label]; dup && s.Label != "" {
				errs.add(lineErr(keyValue(v, "label"), vwhat, fmt.Errorf("label %q is also line %d's (accepted: a label per value of a factor)", s.Label, prev)))
				continue
			}
			// A label names the cell in its value's place (see Cell.ID).
			c.ID = name + "=" + orDefault(s.Label, c.Value)
			if prev, dup := ids[c.ID]; dup {
				errs.add(lineErr(v, vwhat, fmt.Errorf("cell %s repeats line %d's (accepted: distinct values)", c.ID, prev)))
				continue
			}
			if prev, dup := values[c.Value]; dup {
				errs.add(lineErr(v, vwhat, fmt.Errorf("%s is also line %d's value, under another label (accepted: distinct values)", c.Value, prev)))
				continue
			}
			ids[c.ID], labels[s.Label], values[c.Value] = v.Line, keyValue(v, "label").Line, v.Line
			f.Cells = append(f.Cells, c)
		}
		out = append(out, f)
	}
	return out
}
