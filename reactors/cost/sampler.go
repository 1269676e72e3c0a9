package cost

import (
	"math"
	"math/rand/v2"
	"time"
)

// seedStream is the fixed second word of the PCG seed, so that one uint64
// seed picks the stream.
const seedStream = 0x9e3779b97f4a7c15

// Sampler draws costs from a Dist. It is owned by one thread (not safe for
// concurrent use): give each loop or worker its own, with its own seed.
// Sample never allocates. A nil *Sampler samples 0.
type Sampler struct {
	d   Dist
	rng *rand.Rand
}

// NewSampler returns a sampler of d driven by a PCG generator seeded with
// seed: the same (d, seed) gives the same sequence (for a given Go version,
// since math/rand/v2 fixes PCG's sequence but not every float transform).
func NewSampler(d Dist, seed uint64) *Sampler {
	return &Sampler{d: d, rng: rand.New(rand.NewPCG(seed, seedStream))}
}

// Dist returns the distribution s samples.
func (s *Sampler) Dist() Dist {
	if s == nil {
		return Dist{}
	}
	return s.d
}

// Sample returns the next cost: 0 for no cost, the value for fixed (neither
// draws a random number), otherwise a draw within the Dist's bounds (exp and
// lognormal capped at 20× their mean or median).
func (s *Sampler) Sample() time.Duration {
	if s == nil {
		return 0
	}
	d := s.d
	switch d.kind {
	case kindFixed:
		return d.a
	case kindUniform:
		return d.a + time.Duration(s.rng.Int64N(int64(d.b-d.a)+1))
	case kindExp:
		// Inverse CDF: 1-U is in (0, 1], so the log is finite and <= 0.
		x := -float64(d.a) * math.Log(1-s.rng.Float64())
		return capAt(x, d.a)
	case kindLognormal:
		x := float64(d.a) * math.Exp(d.sigma*s.rng.NormFloat64())
		return capAt(x, d.a)
	}
	return 0
}

// capAt rounds x to a Duration, capped at tailCap×base.
func capAt(x float64, base time.Duration) time.Duration {
	if c := float64(tailCap * base); x >= c {
		return tailCap * base
	}
	return time.Duration(x + 0.5)
}
