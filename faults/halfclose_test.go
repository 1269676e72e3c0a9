package faults_test

import (
	"bytes"
	"testing"

	"github.com/reactorlab/reactorlab/faults"
)

func TestHalfClose(t *testing.T) {
	plan := faults.Writes(frames(2)...)
	got := apply(t, faults.HalfClose{}, plan)
	if d := describe(got); d != "write(33 bytes) write(34 bytes) close-write" {
		t.Fatalf("got %s", d)
	}
	if !bytes.Equal(stream(got), stream(plan)) {
		t.Error("byte stream changed")
	}
	if d := describe(apply(t, faults.HalfClose{}, nil)); d != "close-write" {
		t.Errorf("on an empty plan: got %s", d)
	}
}
