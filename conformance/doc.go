// Package conformance runs reactorlab's correctness suite for reactors:
// it runs a list of cases with stable ids (the catalogue is package
// conformance/cases) against a reference reactor in this process
// (InProcess), a reference reactor as a child process (Process), a server
// of your own written in Go, run in the test's process (GoServer: a
// function that serves a TCP byte echo on the listener it is given), or
// any server run as a command (Command, a black box that must serve a TCP
// byte echo on the address in REACTORLAB_LISTEN), and judges and reports
// their verdicts.
//
// The package holds the case contract (case.go: Case, Needs; runner.go:
// C, the whole API a case is written against), the targets (target.go,
// start.go, inprocess_linux.go, goserver_linux.go, process_linux.go,
// serving_*.go), the
// runner (runner.go: RunAll, Run, RunCase) and the reports (report.go).
// It takes the cases as data and knows none of them: the catalogue,
// its shared helpers and the kernel probes only cases use are in
// conformance/cases, which imports this package.
//
// Groups: F framing, R readiness, W write path, I identity, S scheduling
// and fairness, T timers, X stop, A admission, M multi-loop, P completion
// model (buffers, completions, descriptors and teardown of a proactor). Every case
// states its claim, the bound it checks and where the bound comes from
// (the budget arithmetic, not a guess), and the reactor faults (mutants,
// package faults) that must make it fail; the catalogue's tests
// (conformance/cases, conformance/mutation) prove that each mutant is
// caught and that no clean reference reactor fails. On failure a case
// reports its evidence: what was sent, what came back, the counters.
//
// Cases that need the reference control protocol, the reference frame
// limit or a reactor's internal counters are skipped on targets that lack
// them, with the reason: never passed. A black box (Command) may serve a
// second, control address ({control} in its arguments, always offered in
// REACTORLAB_CONTROL_LISTEN): S2 then sends its PINGs there, which a byte
// echo answers unchanged as a reference reactor does. The SIGTERM stop
// contract (X3, X4, X5) is opt-in (Options.Stop), for any process target:
// after SIGTERM each connection's echo stream is an exact prefix of what
// was sent, at least all the server had read, ending in FIN, not RST;
// no connection outlives Options.StopGrace; new connections are refused. A case that ran but could not
// establish what its claim needs (the descriptor limit in force in the
// serving process, its table full, echoes queued in the server's own
// buffers) is Inconclusive, with the reason and the evidence: never
// passed either. One whose precondition the server's design was seen never
// to offer (two signals on every try: Result.ByDesign) is Inconclusive
// the same every run, and Options.Strict does not fail it.
//
// Preconditions are measured, not assumed. A process target is started
// through a launcher that sets its descriptor limit between fork and exec
// and leaves it descriptors 0, 1 and 2 only (harness/proc); every process
// of its group that lives when it starts listening must live until the
// case stops it, or the case fails with CauseTarget.
//
// The environment is not the target: a port another process took between
// its pick and the target's bind is retried on other ports, and how a
// target ends once the stop has signalled it (a crash, an exit status
// other than 0 or 128 + SIGTERM, a kill after the grace) is a finding of
// its own (Result.AtStop), never charged to the case that ran before.
//
// From any Go test, like nettest.TestConn, with a server of your own in
// Go (examples/myloop is a whole module doing this) or a program:
//
//	import (
//		"github.com/reactorlab/reactorlab/conformance"
//		"github.com/reactorlab/reactorlab/conformance/cases"
//	)
//
//	func TestMyLoop(t *testing.T) {
//		conformance.Run(t, conformance.GoServer{Label: "myloop", Serve: myloop.Serve}, cases.Catalogue())
//	}
//
//	func TestMyServer(t *testing.T) {
//		conformance.Run(t, conformance.Command{Argv: []string{"./myserver", "--listen", "{addr}"}}, cases.Catalogue())
//	}
//
// Each case is a subtest named by its id and title
// ("W2_no_busy_loop_while_idle": go test -run 'TestMyLoop/W2' runs it
// alone), and the test logs one line counting the verdicts.
//
// Each case starts a fresh instance and runs alone (timing bounds assume
// the target has the machine to itself), under a watchdog that stops the
// target when the case's time is up. Before any case, Run and RunAll start
// the target once (CheckStart): a program that is missing, exits at once
// or does not listen within the start timeout is one failure, a
// *target.StartError naming the cause with the end of the target's stderr, not
// one failure per case. A run whose context is cancelled judges nothing it
// had not finished: the case then running is Interrupted, the cases after
// it NotRun, and the reports say the run was interrupted.
package conformance
