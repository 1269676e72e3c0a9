package lab

import (
	"math"
	"strings"
	"testing"
)

// CheckServerCPU takes 0 and the caps proc can set, and nothing else.
func TestCheckServerCPU(t *testing.T) {
	for _, ok := range []float64{0, 0.05, 0.5, 1, 1024} {
		if err := CheckServerCPU(ok); err != nil {
			t.Errorf("CheckServerCPU(%v): %v", ok, err)
		}
	}
	for _, bad := range []float64{-0.5, 0.01, 1025, math.NaN(), math.Inf(1)} {
		err := CheckServerCPU(bad)
		if err == nil || !strings.Contains(err.Error(), "0.05..1024") {
			t.Errorf("CheckServerCPU(%v) = %v, want a refusal naming 0.05..1024", bad, err)
		}
	}
}
