package faults_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/faults"
)

func TestSlowConsumer(t *testing.T) {
	sleep := faults.Step{Op: faults.OpSleep, For: time.Millisecond}
	for _, tc := range []struct {
		f    faults.SlowConsumer
		plan []faults.Step
		want string
	}{
		{faults.SlowConsumer{}, []faults.Step{w(1), w(2)}, "pause-reading(1s) write(1 bytes) write(2 bytes)"},
		{faults.SlowConsumer{After: 2, Pause: 500 * time.Millisecond}, []faults.Step{w(1), sleep, w(2), w(3)},
			"write(1 bytes) sleep(1ms) write(2 bytes) pause-reading(500ms) write(3 bytes)"},
		{faults.SlowConsumer{After: 10}, []faults.Step{w(1), op(faults.OpCloseWrite)},
			"write(1 bytes) close-write pause-reading(1s)"},
		{faults.SlowConsumer{}, nil, "pause-reading(1s)"},
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
