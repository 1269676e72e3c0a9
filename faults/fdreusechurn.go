package faults

// FdReuseChurn closes connections with their responses still pending and opens
// new ones at once, so that the server likely gives the new connection the fd
// number of the old one: results and events of the old connection must never
// reach the new one (identity is (slot, generation), not the fd number).
//
// After every Every-th OpWrite (Every <= 0, the zero value, means 1) Apply
// inserts OpClose, or OpReset when Reset is true, then OpReconnect. The last
// write of the plan is followed by the close too, whatever its count, but by no
// reconnect: the plan ends with its last connection closed with work pending.
// Steps after the last write stay after that close.
//
// Invariants: every step of the input is kept, in order; the byte stream, across
// connections, is unchanged. Meant for plans of writes and sleeps: an input op
// that needs the connection open (OpCloseWrite) fails in Play after the close.
type FdReuseChurn struct {
	Every int
	Reset bool
}

// Name returns "fd-reuse-churn".
func (FdReuseChurn) Name() string { return "fd-reuse-churn" }

// Kind returns Wire.
func (FdReuseChurn) Kind() Kind { return Wire }

// Cases returns I1 and I2.
func (FdReuseChurn) Cases() []string { return []string{"I1", "I2"} }

// String returns the spec of f, e.g. "fd-reuse-churn:every=1,reset=true".
func (f FdReuseChurn) String() string { return specString(f.Name(), f.params()) }

func (f *FdReuseChurn) params() []param {
	return []param{intParam("every", &f.Every), boolParam("reset", &f.Reset)}
}

// Apply inserts the closes and reconnects into plan.
func (f FdReuseChurn) Apply(plan []Step) []Step {
	every := max(f.Every, 1)
	end := Step{Op: OpClose}
	if f.Reset {
		end.Op = OpReset
	}
	total := 0
	for _, s := range plan {
		if s.Op == OpWrite {
			total++
		}
	}
	out := make([]Step, 0, len(plan)+2*(total/every+1))
	written := 0
	for _, s := range plan {
		out = append(out, s)
		if s.Op != OpWrite {
			continue
		}
		written++
		switch {
		case written == total:
			out = append(out, end)
		case written%every == 0:
			out = append(out, end, Step{Op: OpReconnect})
		}
	}
	return out
}
