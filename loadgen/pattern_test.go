package loadgen

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/reactorlab/reactorlab/wire"
)

// TestFillPatternMatchesWire: the table-driven fill gives wire.FillPattern's
// bytes, and the digest of them, for every length up to 200 and many seeds.
func TestFillPatternMatchesWire(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 201 {
		for range 20 {
			token, seq := rng.Uint64(), rng.Uint64()
			want := make([]byte, n)
			wire.FillPattern(want, token, seq)
			got := make([]byte, n)
			d := fillPattern(got, token, seq)
			if !bytes.Equal(got, want) {
				t.Fatalf("len %d token %#x seq %d:\n got %x\nwant %x", n, token, seq, got, want)
			}
			if d != digest(want) {
				t.Fatalf("len %d: digest %#x, want %#x", n, d, digest(want))
			}
		}
	}
}

// TestDigestSeesEveryWordChange: flipping any bit of a payload changes its
// digest.
func TestDigestSeesEveryWordChange(t *testing.T) {
	p := make([]byte, 45)
	wire.FillPattern(p, 1, 2)
	d := digest(p)
	for i := range p {
		for bit := range 8 {
			p[i] ^= 1 << bit
			if digest(p) == d {
				t.Fatalf("flipping bit %d of byte %d went unnoticed", bit, i)
			}
			p[i] ^= 1 << bit
		}
	}
}

func BenchmarkFill32(b *testing.B) {
	p := make([]byte, 32)
	b.Run("wire", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			wire.FillPattern(p, 7, uint64(i))
			digest(p)
		}
	})
	b.Run("tables", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			fillPattern(p, 7, uint64(i))
		}
	})
}
