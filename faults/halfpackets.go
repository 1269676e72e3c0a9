package faults

import (
	"slices"
	"time"
)

// HalfPackets splits every write into pieces, so that a frame reaches the
// server in parts, maybe with delays between them: a reader must reassemble
// frames across reads.
//
// Each OpWrite is cut at the offsets in Points (relative to the start of that
// write) and at every multiple of Every when Every > 0: the cut points are the
// union of both. Offsets <= 0 or >= the write's length cut nothing, and
// duplicates count once. With neither (the zero value), every write of two bytes
// or more is cut in half, at len/2. When Delay > 0 an OpSleep{For: Delay} goes
// between consecutive pieces (none after the last).
//
// Invariants: other steps are kept as they are, in order; concatenating the
// pieces of a write gives its bytes exactly.
type HalfPackets struct {
	Points []int
	Every  int
	Delay  time.Duration
}

// Name returns "half-packets".
func (HalfPackets) Name() string { return "half-packets" }

// Kind returns Wire.
func (HalfPackets) Kind() Kind { return Wire }

// Cases returns F1.
func (HalfPackets) Cases() []string { return []string{"F1"} }

// String returns the spec of f, e.g. "half-packets:points=1/7/31,delay=1ms".
func (f HalfPackets) String() string { return specString(f.Name(), f.params()) }

func (f *HalfPackets) params() []param {
	return []param{intsParam("points", &f.Points), intParam("every", &f.Every), durationParam("delay", &f.Delay)}
}

// Apply splits the writes of plan.
func (f HalfPackets) Apply(plan []Step) []Step {
	out := make([]Step, 0, len(plan))
	for _, s := range plan {
		if s.Op != OpWrite {
			out = append(out, s)
			continue
		}
		d, from := s.Data, 0
		for _, at := range f.cuts(len(d)) {
			out = append(out, Step{Op: OpWrite, Data: d[from:at:at]})
			if f.Delay > 0 {
				out = append(out, Step{Op: OpSleep, For: f.Delay})
			}
			from = at
		}
		out = append(out, Step{Op: OpWrite, Data: d[from:len(d):len(d)]})
	}
	return out
}

// cuts returns the sorted, distinct cut points inside a write of n bytes.
func (f HalfPackets) cuts(n int) []int {
	var at []int
	for _, p := range f.Points {
		if p > 0 && p < n {
			at = append(at, p)
		}
	}
	if f.Every > 0 {
		for p := f.Every; p < n; p += f.Every {
			at = append(at, p)
		}
	}
	if len(f.Points) == 0 && f.Every <= 0 && n >= 2 {
		at = append(at, n/2)
	}
	slices.Sort(at)
	return slices.Compact(at)
}
