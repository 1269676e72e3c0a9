package faults

import "strconv"

// Kind says where a fault acts.
type Kind int

// The kinds of fault.
const (
	Wire    Kind = iota + 1 // acts on the client side of a connection
	Reactor                 // a mutant of a reference reactor
)

// String returns "wire" or "reactor", or "Kind(n)" for an undefined value.
func (k Kind) String() string {
	switch k {
	case Wire:
		return "wire"
	case Reactor:
		return "reactor"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is one named fault.
type Fault interface {
	// Name is the stable name as the spec parsers accept it, e.g. "half-packets".
	Name() string
	Kind() Kind
	// Cases lists the conformance case ids concerned: for a wire fault, the
	// cases that apply it and that a correct target must survive; for a reactor
	// fault, the cases that must fail. The slice is the caller's to keep.
	Cases() []string
}

// WireFault is a fault on the client side of a connection: a rewrite of the
// client's send plan.
//
// Apply is pure: it never modifies plan or any step's Data in place, never does
// I/O, and gives the same output for the same input. The output may share Data
// bytes with the input: treat Data as read-only.
type WireFault interface {
	Fault
	Apply(plan []Step) []Step
}
