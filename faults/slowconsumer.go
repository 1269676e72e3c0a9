package faults

import "time"

// SlowConsumer makes the client stop reading for a while, so that the server's
// writes hit a full socket buffer: its out-queue must grow only to its high
// watermark, reading that connection must pause (backpressure), other
// connections must go on, and everything must be delivered once reading resumes.
//
// Apply inserts one OpPauseReading{For: Pause} before the After-th OpWrite,
// counting from 0: After = 0 (the zero value) pauses before the first write,
// After = 10 after ten writes. A plan with no more than After writes gets the
// pause at its end. Pause 0 (the zero value) means 1s.
//
// Invariants: every step of the input is kept, in order; the byte stream is
// unchanged.
type SlowConsumer struct {
	After int
	Pause time.Duration
}

// Name returns "slow-consumer".
func (SlowConsumer) Name() string { return "slow-consumer" }

// Kind returns Wire.
func (SlowConsumer) Kind() Kind { return Wire }

// Cases returns W1 and W3.
func (SlowConsumer) Cases() []string { return []string{"W1", "W3"} }

// String returns the spec of f, e.g. "slow-consumer:after=10,pause=500ms".
func (f SlowConsumer) String() string { return specString(f.Name(), f.params()) }

func (f *SlowConsumer) params() []param {
	return []param{intParam("after", &f.After), durationParam("pause", &f.Pause)}
}

// Apply inserts the pause into plan.
func (f SlowConsumer) Apply(plan []Step) []Step {
	pause := Step{Op: OpPauseReading, For: f.Pause}
	if pause.For <= 0 {
		pause.For = time.Second
	}
	at := writeIndex(plan, f.After)
	out := make([]Step, 0, len(plan)+1)
	out = append(out, plan[:at]...)
	out = append(out, pause)
	return append(out, plan[at:]...)
}

// writeIndex returns the index in plan of the OpWrite with n writes before it,
// or len(plan) when there are no more than n writes.
func writeIndex(plan []Step, n int) int {
	for i, s := range plan {
		if s.Op == OpWrite {
			if n <= 0 {
				return i
			}
			n--
		}
	}
	return len(plan)
}
