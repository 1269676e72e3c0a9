package faults

// HalfClose shuts down the client's writing half (FIN) once the plan is done,
// and keeps reading: the server must still answer everything written before the
// FIN, then close. A server that closes at once on EOF, or never, fails.
//
// Apply appends one OpCloseWrite. It has no parameters.
//
// Invariants: the steps of the input are kept as they are, in order.
type HalfClose struct{}

// Name returns "half-close".
func (HalfClose) Name() string { return "half-close" }

// Kind returns Wire.
func (HalfClose) Kind() Kind { return Wire }

// Cases returns I2.
func (HalfClose) Cases() []string { return []string{"I2"} }

// String returns "half-close".
func (f HalfClose) String() string { return f.Name() }

func (*HalfClose) params() []param { return nil }

// Apply appends the half-close to plan.
func (HalfClose) Apply(plan []Step) []Step {
	out := make([]Step, 0, len(plan)+1)
	out = append(out, plan...)
	return append(out, Step{Op: OpCloseWrite})
}
