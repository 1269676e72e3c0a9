package figure

import (
	"math"
	"strconv"
	"strings"
)

// NotAvailable is what a table shows in a column whose figure does not
// exist, when the row says why elsewhere (a verdict column's Gap, or the
// metric's n).
const NotAvailable = "–"

// Value formats v with 3 significant figures, without an exponent,
// with thousands separators from 1,000 up ("252,000", "18.5", "0.00123");
// NotAvailable ("–") for NaN or an infinity.
func Value(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return NotAvailable
	}
	if v == 0 {
		return "0"
	}
	r := RoundSignificant(v, 3)
	if math.Abs(r) >= 1000 {
		return groupThousands(strconv.FormatFloat(r, 'f', 0, 64))
	}
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(r)))))
	return strconv.FormatFloat(r, 'f', decimals, 64)
}

// Ratio formats a ratio as "×" and Value's 3 significant
// figures ("×1.25", "×0.980"); "×–" for 0 (no ratio) or a value that is
// not finite.
func Ratio(r float64) string {
	if r == 0 {
		return "×" + NotAvailable
	}
	return "×" + Value(r)
}

// Range formats a range of values as "lo–hi" with Value
// ("0.950–1.04", "98,000–103,000").
func Range(lo, hi float64) string { return Value(lo) + "–" + Value(hi) }

// PValue formats a p-value with 2 significant figures ("0.036",
// "9.1e-05"); NotAvailable for NaN.
func PValue(p float64) string {
	if math.IsNaN(p) {
		return NotAvailable
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

// Count formats a count exactly, with thousands separators
// ("1,234,567"): a count is not rounded.
func Count(n int64) string { return groupThousands(strconv.FormatInt(n, 10)) }

// Counted is a count and what it counts, the noun in the singular for
// exactly one: Counted(1, "entry", "entries") is "1 entry", Counted(0,
// …) "0 entries"; the count is written as Count writes it ("2,000
// entries").
func Counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Count(int64(n)) + " " + many
}

// WithUnit is a figure followed by its unit ("18.5 µs"), the figure alone
// for a plain number.
func WithUnit(figure, unit string) string {
	if unit == "" {
		return figure
	}
	return figure + " " + unit
}

// RoundSignificant rounds v to digits significant figures (v ≠ 0).
func RoundSignificant(v float64, digits int) float64 {
	scale := math.Pow(10, float64(digits-1)-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// groupThousands puts commas into the integer digits string s ("-1234567"
// → "-1,234,567").
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}
