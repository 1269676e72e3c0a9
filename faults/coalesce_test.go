package faults_test

import (
	"bytes"
	"testing"

	"github.com/reactorlab/reactorlab/faults"
)

func TestCoalesce(t *testing.T) {
	sleep := faults.Step{Op: faults.OpSleep, For: 1}
	for _, tc := range []struct {
		f    faults.Coalesce
		plan []faults.Step
		want string
	}{
		{faults.Coalesce{}, faults.Writes(frames(4)...), "write(138 bytes)"},
		{faults.Coalesce{Frames: 2}, []faults.Step{w(1), w(2), w(3), w(4), w(5)},
			"write(3 bytes) write(7 bytes) write(5 bytes)"},
		{faults.Coalesce{}, []faults.Step{w(1), w(2), sleep, w(3), op(faults.OpClose), w(4), w(5)},
			"write(3 bytes) sleep(1ns) write(3 bytes) close write(9 bytes)"},
		{faults.Coalesce{Frames: 1}, []faults.Step{w(1), w(2)}, "write(1 bytes) write(2 bytes)"},
		{faults.Coalesce{}, nil, ""},
	} {
		got := apply(t, tc.f, tc.plan)
		if d := describe(got); d != tc.want {
			t.Errorf("%v on %s:\n got %s\nwant %s", tc.f, describe(tc.plan), d, tc.want)
		}
		if !bytes.Equal(stream(got), stream(tc.plan)) {
			t.Errorf("%v: byte stream changed", tc.f)
		}
	}
}

func TestCoalesceDefaultIs256(t *testing.T) {
	plan := make([]faults.Step, 300)
	for i := range plan {
		plan[i] = w(1)
	}
	if d := describe(apply(t, faults.Coalesce{}, plan)); d != "write(256 bytes) write(44 bytes)" {
		t.Fatalf("got %s", d)
	}
}
