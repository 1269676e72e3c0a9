package faults

import (
	"math"

	"github.com/reactorlab/reactorlab/wire"
)

// OverSize sends the header of a frame larger than any server should accept,
// and nothing more: the server must refuse it from the header alone, before
// allocating a buffer of the declared size (a reference reactor answers REJECT
// and closes that connection; other connections go on).
//
// Apply appends one OpWrite of a single 32-byte DATA header declaring a whole
// frame of Declared bytes (length field Declared-4), flags 0, token 0, seq
// math.MaxUint64 (no real frame uses it), send time 0. Declared 0 (the zero
// value) means 64 MiB; values below wire.HeaderSize are raised to it, which makes
// a complete, valid, empty DATA frame: a control, not a fault. The payload the
// header announces is never sent.
//
// Invariants: the steps of the input are kept as they are, in order, before the
// header, so apply OverSize before faults that end the connection.
type OverSize struct {
	Declared uint32
}

// OverSizeSeq is the seq of the header OverSize sends.
const OverSizeSeq = math.MaxUint64

// Name returns "over-size".
func (OverSize) Name() string { return "over-size" }

// Kind returns Wire.
func (OverSize) Kind() Kind { return Wire }

// Cases returns F4.
func (OverSize) Cases() []string { return []string{"F4"} }

// String returns the spec of f, e.g. "over-size:declared=67108864".
func (f OverSize) String() string { return specString(f.Name(), f.params()) }

func (f *OverSize) params() []param { return []param{uint32Param("declared", &f.Declared)} }

// Apply appends the header to plan.
func (f OverSize) Apply(plan []Step) []Step {
	declared := f.Declared
	if declared == 0 {
		declared = 64 << 20
	}
	declared = max(declared, wire.HeaderSize)
	h := make([]byte, wire.HeaderSize)
	wire.PutHeader(h, wire.Header{Length: declared - 4, Kind: wire.KindData, Seq: OverSizeSeq})
	out := make([]Step, 0, len(plan)+1)
	out = append(out, plan...)
	return append(out, Step{Op: OpWrite, Data: h})
}
