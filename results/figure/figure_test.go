package figure

import (
	"math"
	"testing"
)

// TestValue: 3 significant figures, thousands separators, no
// exponent, a dash for NaN.
func TestValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1: "1.00", 18.54: "18.5", 999.7: "1,000", 252_345: "252,000", 1_234_567: "1,230,000",
		0.001234: "0.00123", -4567: "-4,570", 0.5: "0.500", math.NaN(): "–", math.Inf(1): "–",
	} {
		if got := Value(v); got != want {
			t.Errorf("Value(%v) = %q, want %q", v, got, want)
		}
	}
}
