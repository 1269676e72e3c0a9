package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
)

// The JSON of Spec, Result and ProcResult names the unit of every
// duration in its key and writes it in seconds, a decimal number:
// "timeout_s": 60, "elapsed_s": 1.234567891. (CPU times stay integer
// nanoseconds, "user_ns", as the kernel counts them.) The Go fields stay
// time.Duration; these methods translate. A duration survives the round
// trip exactly, to the nanosecond, up to 26 days (2^51 ns), far beyond any
// run.

// secs is a time.Duration that JSON writes as seconds.
type secs = jsontime.Seconds

// specJSON is Spec's JSON: its own fields (durations left out) and the
// durations in seconds.
type specJSON struct {
	*plainSpec
	Timeout     secs `json:"timeout_s,omitempty"`
	Ready       secs `json:"ready_s,omitempty"`
	Grace       secs `json:"grace_s,omitempty"`
	SampleEvery secs `json:"sample_every_s,omitempty"`
	// The unlabelled nanosecond keys of earlier versions, refused rather
	// than silently ignored: a spec that set them would run with defaults.
	OldTimeout     json.RawMessage `json:"timeout,omitempty"`
	OldReady       json.RawMessage `json:"ready,omitempty"`
	OldGrace       json.RawMessage `json:"grace,omitempty"`
	OldSampleEvery json.RawMessage `json:"sample_every,omitempty"`
}

type plainSpec Spec

// MarshalJSON writes the spec with its durations in seconds ("timeout_s").
func (s Spec) MarshalJSON() ([]byte, error) {
	p := plainSpec(s)
	return json.Marshal(specJSON{plainSpec: &p, Timeout: secs(s.Timeout), Ready: secs(s.Ready),
		Grace: secs(s.Grace), SampleEvery: secs(s.SampleEvery)})
}

// UnmarshalJSON reads what MarshalJSON writes. It refuses the keys
// "timeout", "ready", "grace" and "sample_every" (unlabelled nanoseconds,
// as earlier versions wrote them), naming the key to use instead.
func (s *Spec) UnmarshalJSON(b []byte) error {
	v := specJSON{plainSpec: (*plainSpec)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var errs []error
	for _, o := range []struct {
		old string
		raw json.RawMessage
	}{{"timeout", v.OldTimeout}, {"ready", v.OldReady}, {"grace", v.OldGrace}, {"sample_every", v.OldSampleEvery}} {
		if o.raw != nil {
			errs = append(errs, fmt.Errorf("lab spec: %q: durations are %q, in seconds", o.old, o.old+"_s"))
		}
	}
	s.Timeout, s.Ready, s.Grace, s.SampleEvery = time.Duration(v.Timeout), time.Duration(v.Ready),
		time.Duration(v.Grace), time.Duration(v.SampleEvery)
	return errors.Join(errs...)
}

type plainResult Result

type resultJSON struct {
	*plainResult
	Elapsed secs `json:"elapsed_s"`
}

// MarshalJSON writes the result with Elapsed in seconds ("elapsed_s").
func (r Result) MarshalJSON() ([]byte, error) {
	p := plainResult(r)
	return json.Marshal(resultJSON{plainResult: &p, Elapsed: secs(r.Elapsed)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	v := resultJSON{plainResult: (*plainResult)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.Elapsed = time.Duration(v.Elapsed)
	return nil
}

type plainProc ProcResult

type procJSON struct {
	*plainProc
	Elapsed secs `json:"elapsed_s"`
}

// MarshalJSON writes the record with Elapsed in seconds ("elapsed_s").
func (p ProcResult) MarshalJSON() ([]byte, error) {
	q := plainProc(p)
	return json.Marshal(procJSON{plainProc: &q, Elapsed: secs(p.Elapsed)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *ProcResult) UnmarshalJSON(b []byte) error {
	v := procJSON{plainProc: (*plainProc)(p)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Elapsed = time.Duration(v.Elapsed)
	return nil
}
