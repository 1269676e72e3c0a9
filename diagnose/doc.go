// Package diagnose observes a live process for a bounded window from
// /proc and the kernel's TCP tables alone, and says of each of its
// threads that behaves like an event loop what it was doing: waiting,
// serving, spinning, waking itself, blocked or starved, each conclusion
// with the signals that made it and their figures.
//
// Nothing is signalled, stopped or traced: the target's threads are read
// through their /proc files (stat, status, schedstat, syscall, io, and
// wchan for a call resumed by restart_syscall), its
// epoll descriptors through their fdinfo and its sockets' queues through
// inet_diag (packages internal/procfs and internal/inetdiag). Reading a
// thread's syscall and io files and an epoll descriptor's fdinfo needs
// leave to trace the process (the same user, or root); what could not be
// read is said in the report, never taken as a signal's absence.
//
// Observe collects the figures; Classify turns one thread's figures into
// its class by the rules Method states, so that the rules are one
// function, tested on figures without a process.
//
// StartTimes watches a process group for as long as a run lasts, through
// the same readers, and ThreadTimes.Window accounts for its loop
// threads' time over any span of it: the shares waiting, serving,
// runnable and blocked (in which call) that a run shows beside its
// latency.
package diagnose
