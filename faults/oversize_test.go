package faults_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

func TestOverSize(t *testing.T) {
	for _, tc := range []struct {
		f         faults.OverSize
		frameSize int
	}{
		{faults.OverSize{}, 64 << 20},
		{faults.OverSize{Declared: 2 << 20}, 2 << 20},
		{faults.OverSize{Declared: math.MaxUint32}, math.MaxUint32},
		{faults.OverSize{Declared: 10}, wire.HeaderSize}, // raised: a valid empty frame
	} {
		plan := faults.Writes(frames(2)...)
		got := apply(t, tc.f, plan)
		if d := describe(got); d != "write(33 bytes) write(34 bytes) write(32 bytes)" {
			t.Fatalf("%v: got %s", tc.f, d)
		}
		if !bytes.Equal(stream(got[:2]), stream(plan)) {
			t.Errorf("%v: the input's bytes changed", tc.f)
		}
		h, err := wire.ParseHeader(got[2].Data, math.MaxInt)
		if err != nil {
			t.Fatalf("%v: %v", tc.f, err)
		}
		want := wire.Header{Length: uint32(tc.frameSize - 4), Kind: wire.KindData, Seq: faults.OverSizeSeq}
		if h != want {
			t.Errorf("%v: header %+v, want %+v", tc.f, h, want)
		}
		_, err = wire.ParseHeader(got[2].Data, 0)
		if tooLarge := tc.frameSize > wire.DefaultMaxFrame; errors.Is(err, wire.ErrTooLarge) != tooLarge {
			t.Errorf("%v: ParseHeader with the default limit: %v", tc.f, err)
		}
	}
}
