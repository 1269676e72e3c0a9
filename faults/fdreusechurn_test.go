package faults_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/faults"
)

func TestFdReuseChurn(t *testing.T) {
	sleep := faults.Step{Op: faults.OpSleep, For: time.Millisecond}
	for _, tc := range []struct {
		f    faults.FdReuseChurn
		plan []faults.Step
		want string
	}{
		{faults.FdReuseChurn{}, []faults.Step{w(1), w(2), w(3)},
			"write(1 bytes) close reconnect write(2 bytes) close reconnect write(3 bytes) close"},
		{faults.FdReuseChurn{Every: 2, Reset: true}, []faults.Step{w(1), w(2), w(3), w(4), w(5)},
			"write(1 bytes) write(2 bytes) reset reconnect write(3 bytes) write(4 bytes) reset reconnect write(5 bytes) reset"},
		{faults.FdReuseChurn{Every: 2}, []faults.Step{w(1), w(2), w(3), w(4)},
			"write(1 bytes) write(2 bytes) close reconnect write(3 bytes) write(4 bytes) close"},
		{faults.FdReuseChurn{}, []faults.Step{w(1), sleep, w(2), sleep},
			"write(1 bytes) close reconnect sleep(1ms) write(2 bytes) close sleep(1ms)"},
		{faults.FdReuseChurn{}, []faults.Step{sleep}, "sleep(1ms)"},
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
