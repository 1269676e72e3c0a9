package harness

import (
	"fmt"
	"strings"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
)

// The rules of a cell that every front end applies alike, `reactorlab
// run`'s flags and a matrix spec's fields: where a fault spec acts, and
// how many loops the load generator runs when none are given (the range
// of a server CPU cap is the lab's: lab.CheckServerCPU). Each is decided
// once; a front end only names the flag or the field.

// WireFaultNames are the names of the wire faults faults.ParseWire
// accepts, in faults.Wires' order.
func WireFaultNames() []string {
	var names []string
	for _, f := range faults.Wires() {
		names = append(names, f.Name())
	}
	return names
}

// FaultError is a fault spec SplitFault refuses. Wire is why
// faults.ParseWire refused it; Reactor why reactors.ParseFault did, nil
// when it was not asked: the cell has no reference reactor, and a spec
// that is not a wire fault has no place there.
type FaultError struct {
	Spec    string
	Wire    error
	Reactor error
}

// Error names the spec and both refusals, in the words of `reactorlab
// run --fault`: "\"gremlins\": neither a wire fault (half-packets, ...)
// nor a reactor fault (...)"; without a reactor, the wire fault's refusal
// and that reactor faults need one.
func (e *FaultError) Error() string {
	if e.Reactor == nil {
		return fmt.Sprintf("%v (reactor faults apply to a reference reactor only)", e.Wire)
	}
	return fmt.Sprintf("%q: neither a wire fault (%s) nor a reactor fault (%v)", e.Spec, strings.Join(WireFaultNames(), ", "), e.Reactor)
}

// Unwrap is both refusals (faults.ErrSpec's and reactors.ErrConfig's).
func (e *FaultError) Unwrap() []error {
	if e.Reactor == nil {
		return []error{e.Wire}
	}
	return []error{e.Wire, e.Reactor}
}

// SplitFault places one fault spec of a cell: a wire fault, acted out by
// the load generator on every data connection, when faults.ParseWire
// accepts it (wire is then its canonical text, which ParseWire reads
// back as an equal fault); else, for a cell with a reference reactor
// (reactor true), a reactor fault (a mutant), when reactors.ParseFault
// accepts it, and it is switched on in rf (wire ""). Anything else is a
// *FaultError. No name is both a wire and a reactor fault, so the order
// in which the two are tried decides nothing but the words of a refusal.
func SplitFault(spec string, reactor bool, rf *reactors.Faults) (wire string, err error) {
	f, wireErr := faults.ParseWire(spec)
	if wireErr == nil {
		if st, ok := f.(fmt.Stringer); ok {
			return st.String(), nil
		}
		return spec, nil
	}
	if !reactor {
		return "", &FaultError{Spec: spec, Wire: wireErr}
	}
	if err := reactors.ParseFault(spec, rf); err != nil {
		return "", &FaultError{Spec: spec, Wire: wireErr, Reactor: err}
	}
	return "", nil
}

// DefaultLoadLoopsRule says what DefaultLoadLoops gives (the load
// generator's loops when a cell leaves them at 0), for --help and the
// manifest.
const DefaultLoadLoopsRule = "one per CPU of the load generator's set, at most one per connection; 1 when it is unpinned"
