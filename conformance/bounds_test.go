package conformance

import (
	"strings"
	"testing"
)

// boundCase is one bound function's answer at the catalogue's constants:
// the limit it must return and the figures its arithmetic must name.
type boundCase struct {
	name       string
	limit      float64
	gotLimit   float64
	arithmetic string
	figures    []string
}

// checkBounds holds every case to its limit, and its arithmetic to naming
// each figure the limit came from, so that the text a verdict prints and
// the number it compares cannot part.
func checkBounds(t *testing.T, cases []boundCase) {
	t.Helper()
	for _, tc := range cases {
		if tc.gotLimit != tc.limit {
			t.Errorf("%s: limit %v, want %v (arithmetic %q)", tc.name, tc.gotLimit, tc.limit, tc.arithmetic)
		}
		for _, f := range tc.figures {
			if !strings.Contains(tc.arithmetic, f) {
				t.Errorf("%s: arithmetic %q does not name %q", tc.name, tc.arithmetic, f)
			}
		}
	}
}

// bound adapts a bound function's two results to a boundCase.
func bound[T ~int64 | ~float64 | ~int](name string, want T, got T, arithmetic string, figures ...string) boundCase {
	return boundCase{name: name, limit: float64(want), gotLimit: float64(got), arithmetic: arithmetic, figures: figures}
}

func TestM4Bounds(t *testing.T) {
	ref, refText := m4ReferenceLimit(false)
	handoff, handoffText := m4ReferenceLimit(true)
	every, everyText := m4EveryLimit()
	noisy, noisyText := m4NoisyLimit()
	total, totalText := m4TotalLimit()
	checkBounds(t, []boundCase{
		bound("m4ReferenceLimit(no handoff)", 2, ref, refText, "need 1 + 1 = 2"),
		bound("m4ReferenceLimit(handoff)", 3, handoff, handoffText, "need 2", "+ 1 = 3"),
		bound("m4EveryLimit", 75, every, everyText, "75% of 100 connections = 75"),
		bound("m4NoisyLimit", 50, noisy, noisyText, "50% of 100 connections = 50"),
		bound("m4TotalLimit", 150, total, totalText, "1.5 × 100 connections = 150"),
	})
}
