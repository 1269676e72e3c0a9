// Package mutation is the conformance suite's mutation table, kept in a
// test binary of its own: every reactor fault (reactors.Mutants), on every
// reference design it applies to, must fail each case that names it, on
// the case's claim; and the catalogue, the fault types and the mutant
// registry must name each other. The mutants run in-process, and two
// in-process reactors must not share a process (an in-process target
// raises the process's GOMAXPROCS; F4 reads the process's allocations), so
// the table runs in three shards, each this test binary run again as a
// process of its own, side by side.
package mutation
