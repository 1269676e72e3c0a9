// Package jsontime is how reactorlab's JSON writes a duration: in seconds,
// a decimal number, under a key that names the unit ("timeout_s"), never
// an unlabelled integer of nanoseconds.
package jsontime

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Seconds is a time.Duration that JSON writes as seconds, a decimal
// number. A duration survives the round trip exactly, to the nanosecond,
// up to 26 days (2^51 ns), far beyond any run.
type Seconds time.Duration

// maxSeconds bounds the seconds a Seconds accepts, well inside a
// time.Duration (2^63 ns is 292 years).
const maxSeconds = 9e9

// MarshalJSON writes d in seconds, as few digits as round-trip.
func (d Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of seconds, refusing what is not a
// number or lies beyond ±9e9 s.
func (d *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("want a number of seconds: %w", err)
	}
	if math.IsNaN(f) || math.Abs(f) >= maxSeconds {
		return fmt.Errorf("%v seconds is not a duration", f)
	}
	*d = Seconds(math.Round(f * 1e9))
	return nil
}
