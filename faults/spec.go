package faults

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSpec is wrapped by every error of the spec parsers: an unknown fault name,
// an unknown, repeated or malformed parameter, or a bad value.
var ErrSpec = errors.New("faults: bad fault spec")

// Wires returns one default instance of every wire fault, in a stable order.
// Each is the zero value, whose defaults each type documents, except Reset,
// which resets after the first write so that a response is pending.
func Wires() []WireFault {
	return []WireFault{HalfPackets{}, Coalesce{}, SlowConsumer{}, FdReuseChurn{}, OverSize{}, Reset{After: 1}, HalfClose{}}
}

// wireParsers has one parser per wire fault, in the order of Wires.
var wireParsers = []specParser{
	parserFor[HalfPackets](),
	parserFor[Coalesce](),
	parserFor[SlowConsumer](),
	parserFor[FdReuseChurn](),
	parserFor[OverSize](),
	parserFor[Reset](),
	parserFor[HalfClose](),
}

// ParseWire returns the wire fault of spec, "name" or "name:k=v,k=v" (spaces
// around names and values are ignored). Parameters left out keep their zero
// value; counts and durations must not be negative. The String method of every
// wire fault returns a spec that ParseWire turns back into an equal value, for
// every value ParseWire can return. Errors wrap ErrSpec, name the bad fault or
// parameter and list what is accepted.
func ParseWire(spec string) (WireFault, error) {
	name, args, hasArgs := strings.Cut(spec, ":")
	name = strings.TrimSpace(name)
	var names []string
	for _, p := range wireParsers {
		if p.name == name {
			var list []string
			if hasArgs {
				list = strings.Split(args, ",")
			}
			f, err := p.parse(list)
			if err != nil {
				return nil, fmt.Errorf("%w %q: %v", ErrSpec, spec, err)
			}
			return f, nil
		}
		names = append(names, p.name)
	}
	return nil, fmt.Errorf("%w %q: unknown wire fault %q (accepted: %s)", ErrSpec, spec, name, strings.Join(names, ", "))
}

// specParser parses the parameters of one fault.
type specParser struct {
	name  string
	parse func(args []string) (WireFault, error)
}

// parserFor returns the parser of fault type T, whose *T lists its parameters.
func parserFor[T WireFault, P interface {
	*T
	params() []param
}]() specParser {
	var zero T
	return specParser{name: zero.Name(), parse: func(args []string) (WireFault, error) {
		var f T
		if err := setParams(f.Name(), P(&f).params(), args); err != nil {
			return nil, err
		}
		return f, nil
	}}
}

// setParams sets each "k=v" of args through the param named k.
func setParams(name string, ps []param, args []string) error {
	seen := make(map[string]bool)
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return fmt.Errorf("parameter %q of %s is not key=value (%s)", arg, name, accepted(ps))
		}
		i := indexParam(ps, k)
		switch {
		case i < 0:
			return fmt.Errorf("unknown parameter %q of %s (%s)", k, name, accepted(ps))
		case seen[k]:
			return fmt.Errorf("parameter %q of %s given twice", k, name)
		}
		seen[k] = true
		if err := ps[i].set(v); err != nil {
			return fmt.Errorf("parameter %s=%q of %s: %v", k, v, name, err)
		}
	}
	return nil
}

func indexParam(ps []param, k string) int {
	for i, p := range ps {
		if p.name == k {
			return i
		}
	}
	return -1
}

func accepted(ps []param) string {
	if len(ps) == 0 {
		return "it takes no parameters"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return "accepted: " + strings.Join(names, ", ")
}

// specString returns "name" or "name:k=v,…" with the parameters that are not
// zero, in the order of ps.
func specString(name string, ps []param) string {
	var b strings.Builder
	b.WriteString(name)
	sep := ":"
	for _, p := range ps {
		if v := p.get(); v != "" {
			b.WriteString(sep + p.name + "=" + v)
			sep = ","
		}
	}
	return b.String()
}
