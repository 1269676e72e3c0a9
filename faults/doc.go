// Package faults has one job: every fault reactorlab injects, one small type
// each, behind one interface ([Fault]), like the toxics of a fault proxy. A fault
// names the conformance cases concerned with it ([Fault.Cases]).
//
// There are two kinds ([Kind]):
//
//   - Wire faults ([WireFault]) act on the client side of a connection. A client's
//     traffic is a send plan, a list of [Step]s (write these bytes, sleep, stop
//     reading for a while, half-close, close, reset, reconnect); a wire fault is a
//     pure rewrite of that plan ([WireFault.Apply]), so it is tested without a
//     network, and [Play] performs the rewritten plan on a [Link] ([TCPLink] for a
//     real connection). Wire faults compose: apply them one after the other.
//   - Reactor faults switch a reference reactor into a known-buggy mutant
//     (file reactor.go). A correct target survives every wire fault; the
//     conformance suite must catch every reactor fault.
//
// Each fault is a struct whose exported fields are its parameters; the zero
// value is a usable default, documented on the type. Faults are named by a spec,
// "name" or "name:k=v,k=v" ([ParseWire]), and print as one (String).
package faults
