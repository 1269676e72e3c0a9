package conformance

import (
	"context"
	"errors"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
)

// Target is something the suite can test: it starts a fresh instance for
// every case, so one case's damage (a leaked descriptor, a stuck
// connection, counters) never leaks into the next case's verdict.
type Target interface {
	// Name identifies the target in reports ("lt", "cmd:./server").
	Name() string
	// Start starts one instance configured for a case. It returns once the
	// instance accepts connections on every address it reports, or an error.
	// ctx bounds the wait: when it is done, Start stops what it started and
	// returns an error (StartInstance gives Start a deadline and names the
	// cause of a failure). A target that cannot honour setup returns an
	// error wrapping ErrUnsupported, and the case is skipped with that
	// reason.
	Start(ctx context.Context, setup Setup) (Instance, error)
}

// Setup is what a case asks of the instance it is started on.
type Setup struct {
	// Tweak adjusts a reference reactor's configuration for the case
	// (offload workers, timers, budgets). Black-box targets ignore it: the
	// case's claim does not depend on it, only its bound or its reach does.
	Tweak func(d reactors.DesignName, cfg *reactors.Config)
	// FdLimit, when positive, is the RLIMIT_NOFILE of the instance's
	// process. Only process targets can honour it.
	FdLimit uint64
}

// Instance is one running target.
type Instance interface {
	// Addr is the data address ("host:port"): a byte-echo service.
	Addr() string
	// ControlAddr is the control address: a reference reactor's (PING
	// class, STOP), or a black box's second byte-echo address (a Command
	// that serves {control}); "" when the instance has none.
	ControlAddr() string
	// Reference describes the reference reactor behind the instance, or is
	// nil for a black box. Cases derive their bounds from its budgets.
	Reference() *Reference
	// Stats returns the live counters of an in-process reference reactor;
	// other targets return ErrUnsupported (their stats arrive with Stop).
	Stats() (reactors.Stats, error)
	// Usage samples what the server has consumed so far.
	Usage() (Usage, error)
	// Stop stops the instance (STOP-less: a signal, Reactor.Stop, or a
	// GoServer's context cancelled), waits for it, and returns what it
	// left. Idempotent.
	Stop() (Final, error)
}

// Reference is the design and configuration of a reference reactor target.
type Reference struct {
	Design reactors.DesignName
	Config reactors.Config
}

// Usage is a server's resource consumption at one moment. CPU is always
// known: the whole process for process targets, the loop threads for an
// in-process reactor (whose process is the test's own), the whole test
// process for a GoServer (an upper bound: its goroutines cannot be told
// from the test's). RSS and Fds are process-wide and -1 when the instance
// has no process of its own. RunqWait is how long the same threads were
// runnable but waited for a CPU (from schedstat; -1 where the kernel has
// none, or for a GoServer, whose threads run the test too): CPU + RunqWait
// is what the server asked for, which on a contended machine can be far
// more than it got.
type Usage struct {
	CPU      time.Duration
	RunqWait time.Duration
	RSS      int64
	Fds      int
}

// Final is what a stopped instance leaves: the reference reactor's final
// statistics (nil for a black box) and, for process targets, how the
// process ended.
type Final struct {
	Stats *reactors.Stats
	// Exit describes how the instance ended: a process target's "exit 0",
	// "killed after SIGTERM grace"; an in-process reactor's "stopped" or
	// its error; a GoServer's "Serve returned nil" or its error.
	Exit string
	// Clean is false when the instance ended badly during the case: a
	// reactor error, a process of it that exited before the stop, a
	// GoServer's Serve that returned before it. That is charged to the
	// case (CauseTarget).
	Clean bool
	// AtStop, when not empty, says how the instance ended badly once the
	// stop had signalled it: a crash, an exit status other than 0 or
	// 128 + SIGTERM, a kill after the grace period (unless Lingered); a
	// GoServer's Serve that failed, panicked or did not return. It is
	// a finding of its own, reported with the case's result (Result.AtStop)
	// and never charged to the case's claim, which was tested before it.
	AtStop string
	// Lingered: the instance was still running when it was stopped after
	// a case's own SIGTERM (Terminable) and the grace period, and was
	// killed. That alone leaves Clean true: the stop-contract case that
	// sent the signal judges how the instance answered it (X4).
	Lingered bool
}

// Terminable is an instance the stop-contract cases can send SIGTERM to
// and watch: a process target's (Process, Command). A case that needs
// the stop contract (NeedStopContract) runs only on one.
type Terminable interface {
	// Terminate sends SIGTERM now and returns; Stop afterwards ends what
	// is left (SIGKILL once the grace period has passed since Terminate).
	Terminate() error
	// Exited is closed once the process has exited.
	Exited() <-chan struct{}
}

// ProcessGroup is an instance that runs as processes of its own: a
// process target's (Process, Command).
type ProcessGroup interface {
	// Group lists the living processes of the instance's process group,
	// the leader first (while it lives).
	Group() ([]int, error)
}

// ErrUnsupported marks what a target cannot provide; cases that need it
// are skipped with the reason, never passed.
var ErrUnsupported = errors.New("not supported by this target")
