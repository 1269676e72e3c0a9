//go:build linux

package lab

import (
	"time"

	"github.com/reactorlab/reactorlab/target"
)

// labRequest is what the parent sends the run child on its stdin.
type labRequest struct {
	Spec    Spec              `json:"spec"`    // validated, defaults applied
	Sysctls map[string]string `json:"sysctls"` // to set in both namespaces
	// Budget is how long the child has, from its start, until it must have
	// reported its result; the parent kills it soon after.
	Budget time.Duration `json:"budget_ns"`
	// ParentNS are the parent's namespaces by kind ("mnt": "mnt:[…]"); the
	// lab child refuses to run in the parent's mount or PID namespace, and
	// reports only its namespaces that differ from them.
	ParentNS map[string]string `json:"parent_ns"`
	// Loopback asks for a run on 127.0.0.1 in the parent's namespaces: no
	// namespace is made, nothing is mounted.
	Loopback bool `json:"loopback,omitempty"`
	// Probe asks for the setup alone (Check): the child reports it and
	// exits.
	Probe bool `json:"probe,omitempty"`
	// Break is a fault planted by a test (breakVeth…); "" in every real
	// run.
	Break string `json:"break,omitempty"`
}

// labEvent is one JSON line from the keeper or the run child; exactly one
// field is set (Unavailable goes with SetupError, SweepError with Swept).
type labEvent struct {
	// Started (from the keeper, first): the run child runs.
	Started *labStarted `json:"started,omitempty"`
	// SetupError: the run could not be set up ("step: reason"). Nothing was
	// started; the child exits. Unavailable says the kernel refused
	// namespaces (ErrUnavailable); otherwise the lab is broken.
	SetupError  string `json:"setup_error,omitempty"`
	Unavailable bool   `json:"unavailable,omitempty"`
	// Setup: the namespaces exist, joined and configured.
	Setup *labSetup `json:"setup,omitempty"`
	// Up: both processes have started.
	Up *labUp `json:"up,omitempty"`
	// Result: the run is over and both processes are reaped.
	Result *labReport `json:"result,omitempty"`
	// Swept (from the keeper, last): processes of the run it killed after
	// the run child had exited; SweepError: some could not be.
	Swept      []string `json:"swept,omitempty"`
	SweepError string   `json:"sweep_error,omitempty"`
}

type labStarted struct {
	Pid        int      `json:"pid"`        // in the keeper's (the harness's) PID namespace
	UserNS     bool     `json:"user_ns"`    // it runs in a user namespace of its own
	Namespaces []string `json:"namespaces"` // its namespaces that are not the harness's
}

type labSetup struct {
	Namespaces []string          `json:"namespaces"`
	Sysctls    map[string]string `json:"sysctls"`
	Addr       string            `json:"addr"`
	Control    string            `json:"control"`
}

type labReport struct {
	Addr    string      `json:"addr"`
	Control string      `json:"control"`
	Server  *ProcResult `json:"server,omitempty"`
	Client  *ProcResult `json:"client,omitempty"`
	Error   string      `json:"error,omitempty"`
	// Start is why the server could not be started (Error says it too).
	Start *target.StartError `json:"start,omitempty"`
	// Audit is the child's audit of itself, after both processes were
	// reaped and its workers ended.
	Audit *ChildAudit `json:"audit"`
}
