// Package procfs reads what the Linux kernel says about processes,
// threads and descriptors in its /proc files, written once for the
// launcher, the lab and the conformance cases: a process's or thread's
// stat (state, parent, group, CPU ticks, start time, exit code), status
// (memory, threads, CPU mask, context switches), schedstat (run time,
// run-queue wait, timeslices), syscall (the call a thread is blocked in),
// io (the read and write calls a thread made and the bytes they moved),
// the descriptor table and a descriptor's fdinfo (an epoll instance's
// items), the limits file, the command line, the namespace links and
// the uid map, the system's /proc/stat CPU lines, /proc/cpuinfo's model,
// the sysctls of /proc/sys and the network namespace's /proc/net/netstat
// counters, and kcmp(2) of two descriptors.
//
// Each file has a parser, which takes the file's bytes and refuses
// anything it cannot read whole with a *FormatError naming the file and
// the field, and a reader, which opens the file of a process (Self for the
// calling one) or thread. A reader returns the error of opening or reading
// the file as the os package gives it (wrapping fs.ErrNotExist or
// syscall.ESRCH once the process or thread is gone, so that the caller
// tells an ended task from a failure), and a parser's error with File set
// to the path it read. Nothing here panics on bad input.
//
// The files are Linux's: elsewhere every reader fails to open its file,
// and SameFile says kcmp is Linux's.
package procfs
