// Package faults has one job: every fault reactorlab injects, behind one
// interface ([Fault]), like the toxics of a fault proxy. A fault
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
//   - Reactor faults ([ReactorFault]) switch a reference reactor into a
//     known-buggy mutant. They are described once, in the reactors' mutant
//     registry (reactors.Mutants: name, hook, designs, cases, doc), and are
//     all of one type here, [Mutant], over a registry entry ([Reactors],
//     [ParseReactor]). A correct target survives every wire fault; the
//     conformance suite must catch every reactor fault.
//
// Each wire fault is a struct whose exported fields are its parameters; the
// zero value is a usable default, documented on the type. Faults are named by
// a spec, "name" or "name:k=v,k=v" ([ParseWire], [ParseReactor]), and print as
// one (String).
package faults
