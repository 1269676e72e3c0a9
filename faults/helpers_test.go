package faults_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

// frames returns n DATA frames; frame i carries seq i and i+1 payload bytes.
func frames(n int) [][]byte {
	fs := make([][]byte, n)
	for i := range fs {
		payload := bytes.Repeat([]byte{byte('a' + i%26)}, i+1)
		fs[i] = wire.AppendFrame(nil, wire.KindData, 0, 7, uint64(i), 0, payload)
	}
	return fs
}

// stream returns the bytes the plan writes, in order, across connections.
func stream(plan []faults.Step) []byte {
	var b []byte
	for _, s := range plan {
		if s.Op == faults.OpWrite {
			b = append(b, s.Data...)
		}
	}
	return b
}

// describe returns the plan's steps, space-separated: "write(33 bytes) close".
func describe(plan []faults.Step) string {
	s := make([]string, len(plan))
	for i, st := range plan {
		s[i] = st.String()
	}
	return strings.Join(s, " ")
}

func clonePlan(plan []faults.Step) []faults.Step {
	if plan == nil {
		return nil
	}
	c := make([]faults.Step, len(plan))
	for i, s := range plan {
		c[i] = s
		c[i].Data = bytes.Clone(s.Data)
	}
	return c
}

// apply applies f to plan twice and fails t unless Apply is pure: the input
// (steps and bytes) is unchanged and both outputs are equal.
func apply(t *testing.T, f faults.WireFault, plan []faults.Step) []faults.Step {
	t.Helper()
	before := clonePlan(plan)
	out := f.Apply(plan)
	if !reflect.DeepEqual(plan, before) {
		t.Fatalf("%v: Apply modified its input", f)
	}
	if again := f.Apply(plan); !reflect.DeepEqual(out, again) {
		t.Fatalf("%v: Apply is not deterministic:\n%s\n%s", f, describe(out), describe(again))
	}
	return out
}

// w and op are shorthands for plan steps; w(n) writes n bytes.
func w(n int) faults.Step { return faults.Step{Op: faults.OpWrite, Data: bytes.Repeat([]byte{'x'}, n)} }

func op(o faults.Op) faults.Step { return faults.Step{Op: o} }
