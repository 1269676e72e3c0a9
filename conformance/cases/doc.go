// Package cases is the conformance catalogue: every case reactorlab holds
// a reactor to, with its stable id, claim, bound and the faults that must
// make it fail, as data for the runner in package conformance
// (Catalogue, Lookup, Select).
//
// Each case is in the file named for its id (m4.go): its constructor
// (m4Case, whose doc comment states the claim), its Run and the helpers
// only it uses; catalogue.go lists the constructors in catalogue order. A
// case is written against conformance.C alone. What several cases share
// is in files named for what it is: the client (client.go), the latency
// probes (probe.go), the hot load (hotload.go), the SIGTERM load
// (termload.go), the loaded connection and its fill (loaded.go), the
// half-close and its nudge loops (nudge.go), the STOP frame
// (stopframe.go), the reference configuration tweaks (tweaks.go), the
// instance's usage and final statistics (instance.go), statistics
// (stats.go), the monotonic clock frames carry (clock_*.go) and a burst
// on many connections at once (burst.go); and the kernel probes: socket
// queues (sockq*.go), who waits on a listening socket (listeners.go), the
// pollers' descriptor lists (pollwait*.go), the descriptor number by
// which the server holds a connection (fdnumber_*.go).
//
// The cases about work a server holds for a connection (I2, I3, W4) read
// both ends' kernel queues with inet_diag while a client with a 4 KiB
// receive buffer fills the connection, each sample tied to the
// connection's own two sockets (four-tuple and cookie) or discarded. What
// was sent, less what came back and what the kernel holds, is only a
// candidate for what the server holds (a server that dropped bytes shows
// the same figure): it counts while the server's end is open
// (ESTABLISHED, CLOSE_WAIT), and is taken as holding only with positive
// evidence, the bytes delivered later (or, for a server that stopped
// reading, its receive queue full and still).
//
// The package's tests hold the catalogue to account: every clean
// reference design passes it (TestInProcessReference,
// TestProcessReference), examples/echo fails exactly the cases each of
// its bugs breaks (TestBlackBox), and each case's printed bound is the
// arithmetic its code judges by (bounds_test.go). The mutation table is
// package conformance/mutation.
package cases
