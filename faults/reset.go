package faults

// Reset aborts the connection with an RST while responses may be pending: the
// server must see ECONNRESET (or EPIPE on its next write), drop that connection's
// work and go on with the others.
//
// Apply puts an OpReset right after the After-th OpWrite and drops every step
// after it; After = 0 (the zero value) resets before any write. A plan with
// fewer than After writes is kept whole and gets the reset at its end.
//
// Invariants: the steps before the reset are the input's, in order, so the byte
// stream is the input's truncated after its After-th write.
type Reset struct {
	After int
}

// Name returns "reset".
func (Reset) Name() string { return "reset" }

// Kind returns Wire.
func (Reset) Kind() Kind { return Wire }

// Cases returns I2.
func (Reset) Cases() []string { return []string{"I2"} }

// String returns the spec of f, e.g. "reset:after=3".
func (f Reset) String() string { return specString(f.Name(), f.params()) }

func (f *Reset) params() []param { return []param{intParam("after", &f.After)} }

// Apply truncates plan with a reset.
func (f Reset) Apply(plan []Step) []Step {
	at := len(plan)
	if f.After <= 0 {
		at = 0
	} else if i := writeIndex(plan, f.After-1); i < len(plan) {
		at = i + 1
	}
	out := make([]Step, 0, at+1)
	out = append(out, plan[:at]...)
	return append(out, Step{Op: OpReset})
}
