package faults_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/faults"
)

func TestParseWire(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want faults.WireFault
	}{
		{"half-packets", faults.HalfPackets{}},
		{"half-packets:every=1,delay=1ms", faults.HalfPackets{Every: 1, Delay: time.Millisecond}},
		{"half-packets:points=1/7/31", faults.HalfPackets{Points: []int{1, 7, 31}}},
		{" half-packets : points = 1 / 7 , delay=0s ", faults.HalfPackets{Points: []int{1, 7}}},
		{"coalesced:frames=500", faults.Coalesce{Frames: 500}},
		{"slow-consumer:after=10,pause=500ms", faults.SlowConsumer{After: 10, Pause: 500 * time.Millisecond}},
		{"fd-reuse-churn:every=1,reset=true", faults.FdReuseChurn{Every: 1, Reset: true}},
		{"over-size:declared=67108864", faults.OverSize{Declared: 64 << 20}},
		{"reset:after=3", faults.Reset{After: 3}},
		{"half-close", faults.HalfClose{}},
	} {
		got, err := faults.ParseWire(tc.spec)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseWire(%q) = %#v, %v; want %#v", tc.spec, got, err, tc.want)
		}
	}
}

func TestParseWireErrors(t *testing.T) {
	for _, tc := range []struct{ spec, says string }{
		{"", `unknown wire fault "" (accepted: half-packets, coalesced, slow-consumer, fd-reuse-churn, over-size, reset, half-close)`},
		{"no-drain", `unknown wire fault "no-drain"`},
		{"half-packets:size=3", `unknown parameter "size" of half-packets (accepted: points, every, delay)`},
		{"half-packets:every", `parameter "every" of half-packets is not key=value`},
		{"half-packets:every=", `is not key=value`},
		{"half-packets:every=1,,delay=1ms", `parameter "" of half-packets is not key=value`},
		{"half-packets:every=1,every=2", `parameter "every" of half-packets given twice`},
		{"half-packets:every=-1", `every="-1" of half-packets: must not be negative`},
		{"half-packets:points=1//2", `points="1//2" of half-packets`},
		{"half-packets:delay=5", `delay="5" of half-packets`},
		{"half-packets:delay=-1ms", `must not be negative`},
		{"fd-reuse-churn:reset=maybe", `reset="maybe" of fd-reuse-churn`},
		{"over-size:declared=4294967296", `declared="4294967296" of over-size`},
		{"half-close:x=1", `unknown parameter "x" of half-close (it takes no parameters)`},
		{"half-close:", `is not key=value`},
	} {
		f, err := faults.ParseWire(tc.spec)
		if !errors.Is(err, faults.ErrSpec) || f != nil {
			t.Errorf("ParseWire(%q) = %v, %v; want an ErrSpec", tc.spec, f, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseWire(%q): %q does not say %q", tc.spec, err, tc.says)
		}
	}
}

func TestWireFaultsRoundTrip(t *testing.T) {
	all := append(faults.Wires(),
		faults.HalfPackets{Points: []int{1, 7, 31}, Every: 3, Delay: 1500 * time.Microsecond},
		faults.Coalesce{Frames: 500},
		faults.SlowConsumer{After: 10, Pause: 90 * time.Minute},
		faults.FdReuseChurn{Every: 2, Reset: true},
		faults.OverSize{Declared: 4294967295},
		faults.Reset{},
	)
	for _, f := range all {
		got, err := faults.ParseWire(fmt.Sprint(f))
		if err != nil || !reflect.DeepEqual(got, f) {
			t.Errorf("ParseWire(%q) = %#v, %v; want %#v", fmt.Sprint(f), got, err, f)
		}
	}
}

func TestWires(t *testing.T) {
	seen := make(map[string]bool)
	for _, f := range faults.Wires() {
		name := f.Name()
		if seen[name] || f.Kind() != faults.Wire || len(f.Cases()) == 0 {
			t.Errorf("%s: duplicate name, kind %v or cases %v", name, f.Kind(), f.Cases())
		}
		seen[name] = true
		if p, err := faults.ParseWire(name); err != nil || p.Name() != name {
			t.Errorf("ParseWire(%q) = %v, %v", name, p, err)
		}
		f.Cases()[0] = "changed"
		if f.Cases()[0] == "changed" {
			t.Errorf("%s: Cases returns a shared slice", name)
		}
		apply(t, f, faults.Writes(frames(3)...))
	}
}

func FuzzParseWire(f *testing.F) {
	for _, s := range []string{
		"half-packets", "half-packets:every=1,delay=1ms", "half-packets:points=1/7/31", "coalesced:frames=500",
		"slow-consumer:after=10,pause=500ms", "fd-reuse-churn:every=1,reset=true", "over-size:declared=67108864",
		"reset:after=3", "half-close", "half-close:", "reset:after=-1", "x:=,=", "half-packets:points=/", ":",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fault, err := faults.ParseWire(spec)
		if err != nil {
			if !errors.Is(err, faults.ErrSpec) || fault != nil {
				t.Fatalf("ParseWire(%q) = %v, %v", spec, fault, err)
			}
			return
		}
		again, err := faults.ParseWire(fmt.Sprint(fault))
		if err != nil || !reflect.DeepEqual(again, fault) {
			t.Fatalf("%q parsed to %#v, whose spec %q parses to %#v, %v", spec, fault, fmt.Sprint(fault), again, err)
		}
	})
}
