package faults

// Coalesce merges consecutive writes, so that many frames reach the server in
// one segment: a reader must handle several frames per read and keep reading
// until it has consumed them all (or its budget says stop).
//
// Each run of consecutive OpWrites (not separated by any other op) becomes
// writes of up to Frames original writes each, in order; Frames <= 0 (the zero
// value) means 256. A write left alone keeps its Data.
//
// Invariants: other steps are kept as they are, in order; the byte stream is
// unchanged.
type Coalesce struct {
	Frames int
}

// Name returns "coalesced".
func (Coalesce) Name() string { return "coalesced" }

// Kind returns Wire.
func (Coalesce) Kind() Kind { return Wire }

// Cases returns F2 and R1.
func (Coalesce) Cases() []string { return []string{"F2", "R1"} }

// String returns the spec of f, e.g. "coalesced:frames=500".
func (f Coalesce) String() string { return specString(f.Name(), f.params()) }

func (f *Coalesce) params() []param { return []param{intParam("frames", &f.Frames)} }

// Apply merges the runs of writes of plan.
func (f Coalesce) Apply(plan []Step) []Step {
	per := f.Frames
	if per <= 0 {
		per = 256
	}
	var out []Step
	for i := 0; i < len(plan); {
		if plan[i].Op != OpWrite {
			out = append(out, plan[i])
			i++
			continue
		}
		j := i + 1
		for j < len(plan) && j-i < per && plan[j].Op == OpWrite {
			j++
		}
		out = append(out, merge(plan[i:j]))
		i = j
	}
	return out
}

// merge returns one write of the bytes of writes, in order.
func merge(writes []Step) Step {
	if len(writes) == 1 {
		return writes[0]
	}
	n := 0
	for _, w := range writes {
		n += len(w.Data)
	}
	data := make([]byte, 0, n)
	for _, w := range writes {
		data = append(data, w.Data...)
	}
	return Step{Op: OpWrite, Data: data}
}
