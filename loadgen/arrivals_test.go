package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A Poisson timetable has exponential gaps of the source's mean (mean
// and standard deviation both the period, within 2% over 100,000 gaps),
// is the same for the same seed and source, and another for another
// source; firstFrom finds the first item at or after a time.
func TestDrawnTimes(t *testing.T) {
	const period, n = 2e5, 100000
	d := newDrawnTimes(42, 3, period)
	var sum, sq float64
	prev := 0.0
	for k := uint64(0); k < n; k++ {
		at := float64(d.at(k))
		gap := at - prev
		if gap < 0 {
			t.Fatalf("item %d at %v before item %d at %v", k, at, k-1, prev)
		}
		sum, sq, prev = sum+gap, sq+gap*gap, at
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean/period-1) > 0.02 || math.Abs(sd/period-1) > 0.02 {
		t.Errorf("gaps: mean %.0f ns, sd %.0f ns; want both %.0f (exponential)", mean, sd, period)
	}
	again, other := newDrawnTimes(42, 3, period), newDrawnTimes(42, 4, period)
	if again.at(999) != d.at(999) || other.at(999) == d.at(999) {
		t.Errorf("item 999: %d, again %d, another source %d: want the same seed and source to repeat, another source to differ", d.at(999), again.at(999), other.at(999))
	}
	s := schedule{period: period, drawn: d}
	k := s.firstFrom(d.at(500))
	if k != 500 || s.firstFrom(d.at(500)+1) != 501 || s.firstFrom(never) != math.MaxUint64 {
		t.Errorf("firstFrom: %d at item 500's time, %d just after, %d at never", k, s.firstFrom(d.at(500)+1), s.firstFrom(never))
	}
}

// The arrival process is checked: its name, steady sources to apply to,
// and a timetable it can hold.
func TestArrivalsConfig(t *testing.T) {
	for _, tc := range []struct {
		arrivals string
		steady   int
		rate     float64
		want     string
	}{
		{"bursty", 1, 1000, "arrivals = bursty (accepted: fixed or poisson)"},
		{ArrivalsPoisson, 0, 0, "arrivals = poisson without steady sources"},
		{ArrivalsPoisson, 4, 1e7, "more than the 16777216 a drawn timetable holds"},
		{ArrivalsPoisson, 4, 1e5, ""},
		{ArrivalsFixed, 4, 1e7, ""},
	} {
		c := Config{DataAddr: "127.0.0.1:1", Hot: 1, InFlight: 1, Steady: tc.steady, Rate: tc.rate, Arrivals: tc.arrivals, Duration: 10 * time.Second}
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s, %d steady at %g/s: %v, want accepted", tc.arrivals, tc.steady, tc.rate, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s, %d steady at %g/s: %v, want %q", tc.arrivals, tc.steady, tc.rate, err, tc.want)
		}
	}
}
