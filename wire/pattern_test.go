package wire_test

import (
	"bytes"
	"testing"

	"github.com/reactorlab/reactorlab/wire"
)

// The pattern must tell apart what a checking client needs told apart.
func TestFillPatternDistinguishes(t *testing.T) {
	a, b := make([]byte, 64), make([]byte, 64)
	wire.FillPattern(a, 1, 7)
	wire.FillPattern(b, 1, 7)
	if !bytes.Equal(a, b) {
		t.Fatal("same (token, seq) gave different bytes")
	}
	for _, other := range [][2]uint64{{2, 7}, {1, 8}, {0, 0}} {
		wire.FillPattern(b, other[0], other[1])
		if bytes.Equal(a, b) {
			t.Fatalf("(1, 7) and %v gave the same bytes", other)
		}
	}
}
