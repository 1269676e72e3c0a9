// Package priothread is the reference design with a separate control
// reactor: the control address is served by its own loop on its own locked
// OS thread with its own epoll fd, the data address by another.
//
// Control latency then depends on the control loop's rounds only, not on the
// data backlog; the cost is a second thread and a cross-thread hand-off for
// STOP (the data loop quiesces through its ingress). The process must run
// with GOMAXPROCS of at least loops + 1, or the Go scheduler, not the design,
// decides the control latency.
//
// Its hooks (loop_linux.go): two loops, each with its own epoll fd, slot
// table, timers and ingress; the data listener on loop 0, the control
// listener on loop 1 (Layout.ControlLoop); each loop runs lt's flat policy
// (lt.NewFlat). Its state is the layout; Check refuses a configuration
// without a control address.
//
// Control latency also depends on when the kernel runs the control
// loop's thread: on a CPU shared with the data loop, a PING waits for the
// scheduler. Config.ControlSched (serve --control-sched) puts the control
// thread in a real-time class (fifo:P, rr:P), so the kernel switches to it
// the moment a control event arrives, or at a nice value. A real-time
// control loop is held to Config.RTHold: once busy that long without
// blocking, it sleeps as long as it was busy, so a flood on the control
// address takes at most half of the CPU it shares (the kernel's own guard,
// sched_rt_runtime_us, would leave the data loop 5% of it, in one stretch
// of up to 950 ms a second). TestRTHoldBoundsABusyControlLoop measures
// both.
//
// It promises what every reference reactor promises (package reactors),
// and that control frames never wait for a data callback or a data round:
// only for the control loop's own. It does not promise anything about
// the data loop beyond lt's.
package priothread
