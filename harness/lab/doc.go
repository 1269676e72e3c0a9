// Package lab runs a server and a client process, pinned to their CPUs, in
// network namespaces of their own (or on loopback) and leaves nothing
// behind: that is its one job. It records what it saw of both (CPU,
// memory, thread masks, CPU ticks, the server's accept queue) and audits
// itself before and after. The process that calls Run is called the
// harness below; the measured cell (package harness) is one.
//
// # The lab
//
// Run re-executes this program (role "lab", see RunRoleIfChild) as a child
// in new network, PID and mount namespaces, plus a user namespace when the
// kernel refuses them otherwise (rootless), with a parent-death signal of
// SIGKILL. Between the two stands a keeper (role "lab-keeper"), a child of
// the harness in its namespaces, a child subreaper, with a parent-death
// signal of SIGTERM: it starts the lab child, and when the harness dies it
// kills the lab child and reaps it at once, so that no zombie pins the
// lab's PID namespace until the host's init reaps it. The lab child, PID 1
// of its PID namespace, makes every mount private, mounts its own /proc,
// and creates two anonymous network namespaces, one for the server and one
// for the client, joined by a veth pair: 198.18.0.1/24 (server) and
// 198.18.0.2/24 (client), from the benchmarking range, with lo up in both
// and the run's per-namespace sysctls set in both. No namespace is ever
// named (bind-mounted under /run/netns), so nothing outlives the processes
// and descriptors that use it.
//
// The server starts in the server namespace pinned to its CPU, the client
// in the client namespace pinned to its own; each is forked from a thread
// already in that namespace and on that CPU, so every thread of the process
// inherits both. The child waits for the server's addresses to accept (from
// the client's namespace, over the veth), starts the client, waits (bounded)
// for it to exit, stops the server (SIGTERM, grace, SIGKILL), ends its
// worker threads, audits itself, and sends the result to the parent on its
// stdout.
//
// A loopback run is the same run child, keeper and orchestration without
// the namespaces: the run child starts both processes on 127.0.0.1 in the
// harness's namespaces, with the same pinning. Mode auto falls back to it
// only where the kernel refuses namespaces (ErrUnavailable: creating
// one, or mounting the lab's /proc, fails with EPERM, EACCES,
// ENOSPC, EINVAL or EUSERS, or a per-namespace sysctl with EPERM or
// EACCES), and records why in Result.Fallback; Mode lab fails with that
// reason. Any other failure of the setup (netlink, an address, a sysctl
// value, the lab's own checks) is a broken lab: an error in every mode,
// never a fallback.
//
// # What holds
//
//   - Killing the harness, even with SIGKILL, leaves no living process of
//     the run, and no namespace or link, behind, in the lab and on loopback:
//     the keeper, told by its parent-death signal, kills the run child and
//     reaps it; a PID namespace dies with its first process (the kernel
//     kills every other member); on loopback every process of the run whose
//     parent dies is orphaned to the keeper, a child subreaper, which kills
//     and reaps them all, whatever process group or session they moved to;
//     namespaces that no process, descriptor or mount refers to are
//     unreachable and freed. Only the keeper's zombie remains until the
//     host's init reaps it, and it holds nothing of the run. Not covered: a
//     process of the run that is not its descendant (one it had another
//     service start, say), and, on loopback, SIGKILL of the keeper itself
//     (its process group is its own, so the harness's is not enough).
//   - Namespaces are entered only on a goroutine locked to its own OS thread
//     that never returns to Go's pool: its goroutine ends still locked, and
//     Go then discards the thread. It ends only after the process it forked
//     has been reaped, because the parent-death signal fires when the
//     forking thread, not the process, exits. No thread is left in a
//     foreign namespace or on a foreign mask: the run child, where the
//     namespaces are entered and the masks set, checks every one of its
//     threads once its workers have ended and reports it (Audit.Child), and
//     Run checks its own at the end of every run; a thread left abroad in
//     either makes the run invalid.
//   - A leak audit before and after every run (this process's descriptors,
//     its descendant processes, its threads' network namespaces and CPU
//     masks, the host's links, and whether any of the lab's namespaces is
//     still reachable) must match, and the run child must find none of the
//     run's processes still running once it has stopped them, nor the
//     keeper any to sweep after it, or the run is marked invalid with the
//     difference named.
//   - Every run is bounded by Spec.Timeout; every process and goroutine it
//     starts is stopped before Run returns.
//
// # Roles
//
// A process of a run may be this very program in another role: Argv[0]
// "@name" runs /proc/self/exe with REACTORLAB_ROLE=name, and RunRoleIfChild,
// called first thing in main (and in TestMain), runs the role registered
// under that name and exits. In a test, the test binary plays every role.
package lab
