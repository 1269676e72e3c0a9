// Package harness runs one measured pair, a server and a client process, in
// a lab that leaves nothing behind: that is its one job.
//
// # The lab
//
// Run re-executes this program (role "lab", see RunRoleIfChild) as a child
// in new network, PID and mount namespaces, plus a user namespace when the
// kernel refuses them otherwise (rootless), with a parent-death signal of
// SIGKILL. Between the two stands a keeper (role "lab-keeper"), a child of
// the harness in its namespaces, with a parent-death signal of SIGTERM: it
// starts the lab child, and when the harness dies it kills the lab child
// and reaps it at once, so that no zombie pins the lab's PID namespace
// until the host's init reaps it. The lab child, PID 1 of its PID
// namespace, makes every mount private,
// mounts its own /proc, and creates two anonymous network namespaces, one
// for the server and one for the client, joined by a veth pair:
// 198.18.0.1/24 (server) and 198.18.0.2/24 (client), from the benchmarking
// range, with lo up in both and the run's per-namespace sysctls set in both.
// No namespace is ever named (bind-mounted under /run/netns), so nothing
// outlives the processes and descriptors that use it.
//
// The server starts in the server namespace pinned to its CPU, the client
// in the client namespace pinned to its own; each is forked from a thread
// already in that namespace and on that CPU, so every thread of the process
// inherits both. The child waits for the server's addresses to accept (from
// the client's namespace, over the veth), starts the client, waits (bounded)
// for it to exit, stops the server (SIGTERM, grace, SIGKILL), and sends the
// result to the parent on its stdout.
//
// # What holds
//
//   - Killing the harness, even with SIGKILL, leaves no living process, and
//     no namespace or link, behind: the keeper, told by its parent-death
//     signal, kills the lab child and reaps it; a PID namespace dies with its
//     first process (the kernel kills every other member); namespaces that
//     no process, descriptor or mount refers to are unreachable and freed.
//     Only the keeper's zombie remains until the host's init reaps it, and
//     it holds nothing of the lab.
//   - Namespaces are entered only on a goroutine locked to its own OS thread
//     that never returns to Go's pool: its goroutine ends still locked, and
//     Go then discards the thread. It ends only after the process it forked
//     has been reaped, because the parent-death signal fires when the
//     forking thread, not the process, exits. No thread of the harness is
//     left in a foreign namespace; Run checks that at the end of every run.
//   - A leak audit before and after every run (this process's descriptors,
//     its descendant processes, its threads' network namespaces and CPU
//     masks, the host's links, and whether any of the lab's namespaces is
//     still reachable) must match, or the run is marked invalid with the
//     difference named.
//   - Every run is bounded by LabSpec.Timeout; every process and goroutine it
//     starts is stopped before Run returns.
//
// Without namespace privileges, Mode auto falls back to loopback
// (127.0.0.1, same pinning, same orchestration, in this process) and records
// why; Mode lab fails with that reason.
//
// # Roles
//
// A process of a run may be this very program in another role: Argv[0]
// "@name" runs /proc/self/exe with REACTORLAB_ROLE=name, and RunRoleIfChild,
// called first thing in main (and in TestMain), runs the role registered
// under that name and exits. In a test, the test binary plays every role.
package harness
