package faults_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/faults"
)

func TestHalfPackets(t *testing.T) {
	for _, tc := range []struct {
		f    faults.HalfPackets
		plan []faults.Step
		want string
	}{
		{faults.HalfPackets{}, []faults.Step{w(33), w(34)},
			"write(16 bytes) write(17 bytes) write(17 bytes) write(17 bytes)"},
		{faults.HalfPackets{}, []faults.Step{w(1), w(0), op(faults.OpClose)},
			"write(1 bytes) write(0 bytes) close"},
		{faults.HalfPackets{Points: []int{31, 1, 7, 0, -3, 7, 40, 500}}, []faults.Step{w(40)},
			"write(1 bytes) write(6 bytes) write(24 bytes) write(9 bytes)"},
		{faults.HalfPackets{Every: 10}, []faults.Step{w(33), w(10)},
			"write(10 bytes) write(10 bytes) write(10 bytes) write(3 bytes) write(10 bytes)"},
		{faults.HalfPackets{Points: []int{5, 10}, Every: 10}, []faults.Step{w(25)},
			"write(5 bytes) write(5 bytes) write(10 bytes) write(5 bytes)"},
		{faults.HalfPackets{Points: []int{2}, Delay: time.Millisecond}, []faults.Step{w(3), op(faults.OpCloseWrite)},
			"write(2 bytes) sleep(1ms) write(1 bytes) close-write"},
		{faults.HalfPackets{Every: 1, Delay: time.Millisecond}, []faults.Step{w(3)},
			"write(1 bytes) sleep(1ms) write(1 bytes) sleep(1ms) write(1 bytes)"},
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

func TestHalfPacketsFramesAndPieceCapacity(t *testing.T) {
	plan := faults.Writes(frames(3)...)
	got := apply(t, faults.HalfPackets{Points: []int{1, 7, 31}}, plan)
	if len(got) != 12 || !bytes.Equal(stream(got), stream(plan)) {
		t.Fatalf("got %s", describe(got))
	}
	for _, s := range got {
		if cap(s.Data) != len(s.Data) {
			t.Fatalf("piece of %d bytes has capacity %d: appending to it would overwrite the input", len(s.Data), cap(s.Data))
		}
	}
}
