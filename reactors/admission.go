package reactors

import (
	"fmt"
	"strconv"
	"strings"
)

// Admission is a parsed Config.Admission: open (Rate 0: every DATA frame is
// admitted), or a token bucket of Burst tokens refilled at Rate per second
// on each loop, which refuses DATA beyond it while the loop is past
// saturation. Use ParseAdmission.
type Admission struct {
	Rate  float64 // tokens per second per loop; 0: open
	Burst int     // bucket size, >= 1 when Rate > 0
}

// AdmissionOpen is Config.Admission's default: no limit.
const AdmissionOpen = "open"

// AdmissionForms lists the forms ParseAdmission accepts, for help and
// errors.
const AdmissionForms = "open, token-bucket:RATE/BURST (RATE DATA frames per second per loop, > 0; BURST tokens, 1..1000000)"

// Open reports whether a admits every frame.
func (a Admission) Open() bool { return a.Rate == 0 }

// ParseAdmission reads Config.Admission: "open" or
// "token-bucket:RATE/BURST". Errors name the form and the ranges (not the
// text given: the caller names it).
func ParseAdmission(s string) (Admission, error) {
	if s == AdmissionOpen {
		return Admission{}, nil
	}
	rest, ok := strings.CutPrefix(s, "token-bucket:")
	if !ok {
		return Admission{}, fmt.Errorf("not an admission policy (accepted: %s)", AdmissionForms)
	}
	rate, burst, ok := strings.Cut(rest, "/")
	r, err1 := strconv.ParseFloat(rate, 64)
	b, err2 := strconv.Atoi(burst)
	if !ok || err1 != nil || err2 != nil || !(r > 0 && r <= 1e9) || b < 1 || b > 1000000 {
		return Admission{}, fmt.Errorf("want token-bucket:RATE/BURST with RATE in (0, 1e9] and BURST in 1..1000000 (accepted: %s)", AdmissionForms)
	}
	return Admission{Rate: r, Burst: b}, nil
}
