package cost

import (
	"math"
	"strings"
	"testing"
	"time"
)

const us = time.Microsecond

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Dist
		err  string // substring of the error; "" = no error
	}{
		{in: "", want: Dist{}},
		{in: "0", want: Dist{}},
		{in: "  0 ", want: Dist{}},
		{in: "0s", want: Dist{}},
		{in: "fixed:0", want: Dist{}},
		{in: "50us", want: Dist{kind: kindFixed, a: 50 * us}},
		{in: "50µs", want: Dist{kind: kindFixed, a: 50 * us}},
		{in: "fixed:1.5ms", want: Dist{kind: kindFixed, a: 1500 * us}},
		{in: "FIXED:50us", want: Dist{kind: kindFixed, a: 50 * us}},
		{in: "uniform:10us-90us", want: Dist{kind: kindUniform, a: 10 * us, b: 90 * us}},
		{in: "uniform: 0 - 90us", want: Dist{kind: kindUniform, b: 90 * us}},
		{in: "uniform:5us-5us", want: Dist{kind: kindUniform, a: 5 * us, b: 5 * us}},
		{in: "uniform:0-0s", want: Dist{}},
		{in: "exp:50us", want: Dist{kind: kindExp, a: 50 * us}},
		{in: "lognormal:50us,0.5", want: Dist{kind: kindLognormal, a: 50 * us, sigma: 0.5}},
		{in: "lognormal:50us, 0", want: Dist{kind: kindLognormal, a: 50 * us}},
		{in: "1m", want: Dist{kind: kindFixed, a: time.Minute}},

		{in: "fast", err: `as a fixed duration: "fast" is not a duration`},
		{in: "50", err: `"50" is not a duration`},
		{in: "-5us", err: "negative"},
		{in: "2m", err: "exceeds the maximum 1m0s"},
		{in: "gauss:50us", err: `unknown form "gauss"`},
		{in: "fixed:", err: "fixed:DURATION: duration is empty"},
		{in: "uniform:90us", err: "missing '-'"},
		{in: "uniform:90us-10us", err: "low 90µs > high 10µs"},
		{in: "uniform:10us-x", err: `high "x" is not a duration`},
		{in: "uniform:-10us-20us", err: "low duration is empty"},
		{in: "exp:0", err: "mean must be > 0"},
		{in: "exp:abc", err: `mean "abc" is not a duration`},
		{in: "lognormal:50us", err: "missing ','"},
		{in: "lognormal:0,0.5", err: "median must be > 0"},
		{in: "lognormal:50us,x", err: `sigma "x" is not a number`},
		{in: "lognormal:50us,-1", err: "sigma -1 out of range"},
		{in: "lognormal:50us,11", err: "sigma 11 out of range"},
		{in: "lognormal:50us,NaN", err: "out of range"},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error containing %q", tc.in, got, tc.err)
				continue
			}
			if !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "accepted forms:") {
				t.Errorf("Parse(%q) error %q: want it to contain %q and list the accepted forms", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, in := range []string{
		"0", "50us", "fixed:1ns", "fixed:1m", "fixed:59.999999999s",
		"uniform:10us-90us", "uniform:0-1ns", "uniform:7us-7us",
		"exp:50us", "exp:1.234567ms", "lognormal:50us,0.5", "lognormal:1ms,0", "lognormal:3us,0.1234567890123",
	} {
		d, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		s := d.String()
		back, err := Parse(s)
		if err != nil || back != d {
			t.Errorf("Parse(%q).String() = %q, which parses to %#v, %v; want %#v", in, s, back, err, d)
		}
		if strings.ContainsRune(s, 'µ') {
			t.Errorf("String() = %q is not ASCII", s)
		}
	}
	if (Dist{}).String() != "0" || !(Dist{}).IsZero() || (Dist{}).Mean() != 0 {
		t.Error("zero Dist is not \"0\", zero, mean 0")
	}
}

func TestMean(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"fixed:50us", 50 * us},
		{"uniform:10us-90us", 50 * us},
		{"uniform:0-3ns", 1}, // integer midpoint, truncated
		{"exp:50us", 50 * us},
		{"lognormal:50us,0", 50 * us},
		// M·e^(s²/2) = 50us·1.133148453 ; the cap changes it by 2e-9.
		{"lognormal:50us,0.5", 56657 * time.Nanosecond},
	} {
		d, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Mean(); got != tc.want {
			t.Errorf("Parse(%q).Mean() = %v, want %v", tc.in, got, tc.want)
		}
	}
	// Wide lognormal: the cap matters; capped mean is well below M·e^(s²/2).
	d, _ := Parse("lognormal:10us,2")
	if m, unc := d.Mean(), time.Duration(10e3*math.Exp(2)); m >= unc*6/10 || m <= 3*10*us {
		t.Errorf("lognormal:10us,2 Mean = %v, want about 36µs (uncapped %v)", m, unc)
	}
}
