package cost

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxCost bounds every duration Parse accepts (fixed value, uniform bound,
// exp mean, lognormal median): a per-frame cost above it is a typo, and the
// bound keeps 20× caps far from overflow.
const MaxCost = time.Minute

// tailCap is the cap of the unbounded distributions, as a multiple of their
// mean (exp) or median (lognormal).
const tailCap = 20

// maxSigma bounds the lognormal shape parameter.
const maxSigma = 10

type kind uint8

const (
	kindNone kind = iota
	kindFixed
	kindUniform
	kindExp
	kindLognormal
)

// Dist is a distribution of per-frame callback cost. It is a comparable value
// type; the zero Dist is "no cost". Build one with Parse.
//
// Invariant (enforced by Parse): 0 <= a <= b <= MaxCost for uniform;
// 0 < a <= MaxCost for fixed, exp and lognormal; 0 <= sigma <= 10.
type Dist struct {
	kind  kind
	a, b  time.Duration // fixed: a; uniform: [a, b]; exp: mean a; lognormal: median a
	sigma float64       // lognormal only
}

// accepted lists the forms Parse takes, for error messages.
const accepted = `accepted forms: "0" or "" (no cost), "50us" or "fixed:50us", ` +
	`"uniform:10us-90us", "exp:50us" (mean), "lognormal:50us,0.5" (median,sigma)`

func parseErr(s, form, format string, args ...any) error {
	return fmt.Errorf("cost: parse %q as %s: %s; %s", s, form, fmt.Sprintf(format, args...), accepted)
}

// Parse reads a cost specification:
//
//	"" or "0"             no cost
//	"50us", "fixed:50us"  every frame costs 50µs
//	"uniform:10us-90us"   uniform on [10µs, 90µs]
//	"exp:50us"            exponential with mean 50µs, capped at 20× the mean
//	"lognormal:50us,0.5"  lognormal with median 50µs and sigma 0.5, capped at
//	                      20× the median
//
// Durations use time.ParseDuration syntax ("us" and "µs" both work), must not
// be negative and must not exceed MaxCost; exp and lognormal need a positive
// mean or median; sigma is in [0, 10]. A fixed or uniform cost of zero is no
// cost. Surrounding space and the case of the form name are ignored. Errors
// name the form being parsed, what was wrong, and the accepted forms.
func Parse(s string) (Dist, error) {
	in := strings.TrimSpace(s)
	if in == "" || in == "0" {
		return Dist{}, nil
	}
	name, arg, ok := strings.Cut(in, ":")
	if !ok {
		d, err := parseDur(s, "a fixed duration", "", in)
		if err != nil {
			return Dist{}, err
		}
		return fixed(d), nil
	}
	switch form := strings.ToLower(strings.TrimSpace(name)); form {
	case "fixed":
		d, err := parseDur(s, "fixed:DURATION", "", arg)
		if err != nil {
			return Dist{}, err
		}
		return fixed(d), nil
	case "uniform":
		const f = "uniform:LOW-HIGH"
		lo, hi, ok := strings.Cut(arg, "-")
		if !ok {
			return Dist{}, parseErr(s, f, "missing '-' between low and high in %q", arg)
		}
		a, err := parseDur(s, f, "low ", lo)
		if err != nil {
			return Dist{}, err
		}
		b, err := parseDur(s, f, "high ", hi)
		if err != nil {
			return Dist{}, err
		}
		if a > b {
			return Dist{}, parseErr(s, f, "low %v > high %v", a, b)
		}
		if b == 0 {
			return Dist{}, nil
		}
		return Dist{kind: kindUniform, a: a, b: b}, nil
	case "exp":
		const f = "exp:MEAN"
		m, err := parseDur(s, f, "mean ", arg)
		if err != nil {
			return Dist{}, err
		}
		if m == 0 {
			return Dist{}, parseErr(s, f, "mean must be > 0")
		}
		return Dist{kind: kindExp, a: m}, nil
	case "lognormal":
		const f = "lognormal:MEDIAN,SIGMA"
		med, sig, ok := strings.Cut(arg, ",")
		if !ok {
			return Dist{}, parseErr(s, f, "missing ',' between median and sigma in %q", arg)
		}
		m, err := parseDur(s, f, "median ", med)
		if err != nil {
			return Dist{}, err
		}
		if m == 0 {
			return Dist{}, parseErr(s, f, "median must be > 0")
		}
		sigma, err := strconv.ParseFloat(strings.TrimSpace(sig), 64)
		if err != nil {
			return Dist{}, parseErr(s, f, "sigma %q is not a number", strings.TrimSpace(sig))
		}
		if !(sigma >= 0 && sigma <= maxSigma) { // also rejects NaN
			return Dist{}, parseErr(s, f, "sigma %v out of range [0, %d]", sigma, maxSigma)
		}
		return Dist{kind: kindLognormal, a: m, sigma: sigma}, nil
	default:
		return Dist{}, fmt.Errorf("cost: parse %q: unknown form %q; %s", s, name, accepted)
	}
}

func fixed(d time.Duration) Dist {
	if d == 0 {
		return Dist{}
	}
	return Dist{kind: kindFixed, a: d}
}

// parseDur parses one duration field of form, checking 0 <= d <= MaxCost.
func parseDur(s, form, field, v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, parseErr(s, form, "%sduration is empty", field)
	}
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, parseErr(s, form, "%s%q is not a duration like 50us or 1.5ms", field, v)
	}
	if d < 0 {
		return 0, parseErr(s, form, "%sduration %v is negative", field, d)
	}
	if d > MaxCost {
		return 0, parseErr(s, form, "%sduration %v exceeds the maximum %v", field, d, MaxCost)
	}
	return d, nil
}

// fmtDur is Duration.String with an ASCII "us", so specs stay plain ASCII.
func fmtDur(d time.Duration) string { return strings.Replace(d.String(), "µs", "us", 1) }

// String returns the canonical specification of d ("0", "fixed:50us",
// "uniform:10us-90us", "exp:50us", "lognormal:50us,0.5"), which Parse maps
// back to exactly d.
func (d Dist) String() string {
	switch d.kind {
	case kindFixed:
		return "fixed:" + fmtDur(d.a)
	case kindUniform:
		return "uniform:" + fmtDur(d.a) + "-" + fmtDur(d.b)
	case kindExp:
		return "exp:" + fmtDur(d.a)
	case kindLognormal:
		return "lognormal:" + fmtDur(d.a) + "," + strconv.FormatFloat(d.sigma, 'g', -1, 64)
	}
	return "0"
}

// IsZero reports whether d is "no cost" (every sample is 0).
func (d Dist) IsZero() bool { return d.kind == kindNone }

// Mean returns the expected value of a sample of d, caps included: fixed is
// its value, uniform the midpoint; exp with mean m gives m(1 - e^-20), and
// lognormal with median M and sigma s gives
//
//	M·[e^(s²/2)·Φ((ln 20 - s²)/s) + 20·(1 - Φ(ln 20 / s))]
//
// where Φ is the standard normal CDF: the uncapped M·e^(s²/2) to within 2e-9
// (relative) for s <= 0.5, 1e-4 at s = 0.75, 0.6% less at s = 1, half at s = 2,
// where the 20× cap bites.
func (d Dist) Mean() time.Duration {
	switch d.kind {
	case kindFixed:
		return d.a
	case kindUniform:
		return d.a + (d.b-d.a)/2
	case kindExp:
		return round(float64(d.a) * -math.Expm1(-tailCap))
	case kindLognormal:
		m := float64(d.a)
		if d.sigma == 0 {
			return d.a
		}
		s, l := d.sigma, math.Log(tailCap)
		below := math.Exp(s*s/2) * phi((l-s*s)/s) // E[X; X < cap] / M
		above := tailCap * (1 - phi(l/s))         // cap · P(X >= cap) / M
		return round(m * (below + above))
	}
	return 0
}

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func round(x float64) time.Duration { return time.Duration(math.Round(x)) }
