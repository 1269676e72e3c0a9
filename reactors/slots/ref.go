package slots

import "strconv"

// Ref names one incarnation of a source: the slot index in the high 32 bits,
// the slot's generation in the low 32 bits. Generation 0 is never issued, so the
// zero Ref means "no source" and no Table ever resolves it.
type Ref uint64

// MakeRef builds the Ref of slot with generation gen. It does not validate: a
// gen of 0 gives a Ref that no Table resolves.
func MakeRef(slot, gen uint32) Ref { return Ref(uint64(slot)<<32 | uint64(gen)) }

// Slot returns the slot index of r.
func (r Ref) Slot() uint32 { return uint32(r >> 32) }

// Gen returns the generation of r; 0 means r names no source.
func (r Ref) Gen() uint32 { return uint32(r) }

// String formats r as "slot/gen" (for logs and test failures).
func (r Ref) String() string {
	return strconv.FormatUint(uint64(r.Slot()), 10) + "/" + strconv.FormatUint(uint64(r.Gen()), 10)
}
