// Package cost is the callback cost of a reference reactor: the CPU each DATA
// frame burns on the loop thread before it is echoed, fixed or drawn from a
// distribution, so that "fast callback" and "bounded slow callback" are one
// configuration factor.
//
// Invariants:
//
//   - a Dist is a comparable value; its zero value means no cost, and
//     Parse(d.String()) == d for every Dist;
//   - every sample is bounded: fixed is exact, uniform stays in [low, high],
//     exp and lognormal are capped at 20× their mean or median, so one unlucky
//     draw cannot stall a loop for ever; Mean accounts for the caps;
//   - a Sampler is deterministic for a given Dist, seed and Go version, is
//     owned by one thread, and never allocates in Sample;
//   - Spin burns CPU on the calling thread for the given wall time: it never
//     sleeps, blocks or yields on purpose (the Go scheduler may still preempt
//     it, as it would any long callback). It reads the clock every few hundred
//     iterations; it is the one function of this package that reads a clock.
package cost
