package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Ledger is the STOP_ACK payload: what a reactor did with the requests it
// accepted. A correct reactor answers STOP with a balanced ledger.
type Ledger struct {
	Accepted  uint64 `json:"accepted"`  // requests admitted before STOP closed admission
	Completed uint64 `json:"completed"` // accepted requests answered in full
	Rejected  uint64 `json:"rejected"`  // accepted requests answered with REJECT
}

// Balanced reports whether nothing is unaccounted: Accepted == Completed + Rejected,
// computed without overflow.
func (l Ledger) Balanced() bool {
	return l.Completed <= l.Accepted && l.Accepted-l.Completed == l.Rejected
}

// EncodeLedger returns the JSON object {"accepted":A,"completed":C,"rejected":R},
// in that field order, for use as a STOP_ACK payload.
func EncodeLedger(l Ledger) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"accepted":`...)
	b = strconv.AppendUint(b, l.Accepted, 10)
	b = append(b, `,"completed":`...)
	b = strconv.AppendUint(b, l.Completed, 10)
	b = append(b, `,"rejected":`...)
	b = strconv.AppendUint(b, l.Rejected, 10)
	return append(b, '}')
}

// ledgerFields are the keys DecodeLedger requires, in the order it checks them.
var ledgerFields = [...]string{"accepted", "completed", "rejected"}

// DecodeLedger parses a STOP_ACK payload. It must be a JSON object whose keys
// "accepted", "completed" and "rejected" (matched exactly, case included) hold
// unsigned integers; other keys are ignored. A missing, null or non-integer field
// is an error naming the field and wrapping ErrMalformed. DecodeLedger does not
// check that the ledger is balanced: see Ledger.Balanced.
func DecodeLedger(p []byte) (Ledger, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p, &obj); err != nil {
		return Ledger{}, fmt.Errorf("ledger: %v: %w", err, ErrMalformed)
	}
	if obj == nil {
		return Ledger{}, fmt.Errorf("ledger: payload is null, want a JSON object: %w", ErrMalformed)
	}
	var vals [len(ledgerFields)]uint64
	for i, name := range ledgerFields {
		raw, ok := obj[name]
		if !ok {
			return Ledger{}, fmt.Errorf("ledger: missing field %q: %w", name, ErrMalformed)
		}
		if bytes.Equal(raw, []byte("null")) {
			return Ledger{}, fmt.Errorf("ledger: field %q is null: %w", name, ErrMalformed)
		}
		if err := json.Unmarshal(raw, &vals[i]); err != nil {
			return Ledger{}, fmt.Errorf("ledger: field %q: %v: %w", name, err, ErrMalformed)
		}
	}
	return Ledger{Accepted: vals[0], Completed: vals[1], Rejected: vals[2]}, nil
}
