package faults_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/faults"
)

func TestReset(t *testing.T) {
	sleep := faults.Step{Op: faults.OpSleep, For: time.Millisecond}
	plan := []faults.Step{w(1), sleep, w(2), sleep, w(3)}
	for _, tc := range []struct {
		f      faults.Reset
		want   string
		stream int // bytes of the input stream kept
	}{
		{faults.Reset{}, "reset", 0},
		{faults.Reset{After: 1}, "write(1 bytes) reset", 1},
		{faults.Reset{After: 2}, "write(1 bytes) sleep(1ms) write(2 bytes) reset", 3},
		{faults.Reset{After: 3}, "write(1 bytes) sleep(1ms) write(2 bytes) sleep(1ms) write(3 bytes) reset", 6},
		{faults.Reset{After: 9}, "write(1 bytes) sleep(1ms) write(2 bytes) sleep(1ms) write(3 bytes) reset", 6},
	} {
		got := apply(t, tc.f, plan)
		if d := describe(got); d != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.f, d, tc.want)
		}
		if !bytes.Equal(stream(got), stream(plan)[:tc.stream]) {
			t.Errorf("%v: byte stream not truncated after %d bytes", tc.f, tc.stream)
		}
	}
}
