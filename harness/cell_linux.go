//go:build linux

package harness

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/internal/jsontime"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

// The files a cell writes into its directory.
const (
	// CellLoadConfigFile is the load generator's configuration, as handed to
	// the loadgen role.
	CellLoadConfigFile = "loadgen-config.json"
	// CellProgressFile receives one JSON line per progress report of the
	// load generator while it runs.
	CellProgressFile = "progress.jsonl"
	// CellSummaryFile is the whole CellResult as JSON.
	CellSummaryFile = "summary.json"
	// CellReportFile is the text summary WriteSummary prints.
	CellReportFile = "summary.txt"
	// The load generator writes loadgen.hlog and loadgen.json itself
	// (loadgen.Result.WriteFiles).
)

// CellFiles are the files a cell may write into its directory; a directory
// holding any of them holds a run (CheckCellDir).
var CellFiles = []string{CellSummaryFile, CellReportFile, CellLoadConfigFile, CellProgressFile, loadgen.HlogFile, loadgen.SummaryFile}

// DefaultStartTimeout is the default of CellSpec.StartTimeout.
const DefaultStartTimeout = proc.DefaultReady

// MaxStartTimeout bounds CellSpec.StartTimeout.
const MaxStartTimeout = 10 * time.Minute

// CellSpec describes one measured cell, as RunCell runs it (what lab.Spec
// is to lab.Run): a target under one load, placed, and the directory for its
// files. Target is a reference design or a command (Validate refuses the
// zero Spec, and says what else must hold); `reactorlab run` builds one
// from its flags, a matrix one per planned run.
//
// Its JSON writes the target under the key of its kind: "reactor" with a
// design's name, "target" with a command as written (no "cmd:").
type CellSpec struct {
	// Target is what serves. A reference design is run as the "serve"
	// role with Config (whose Listen and ControlListen the harness
	// sets). A black-box server command is run by /bin/sh -c in the
	// server's place with REACTORLAB_LISTEN=host:port and every {addr}
	// replaced; a command with {control} serves a second, control
	// address: {control} is replaced by it and REACTORLAB_CONTROL_LISTEN
	// carries it, the run waits for it too, and the load generator's
	// control class (PINGs, control_every) goes there. Without {control}
	// it serves data and control on one address.
	Target target.Spec     `json:"-"`
	Config reactors.Config `json:"-"`
	// ServeArgs are the serve flags that turn the default configuration
	// into Config as given, recorded for the reader (filled in by
	// RunCell); the --loop-cpus the placement adds (Place) is not among
	// them, but is in the lab's record of the server's argv.
	ServeArgs []string `json:"serve_args,omitempty"`
	// Load is the load; its addresses are set by the harness.
	Load loadgen.Config `json:"load"`
	// Placement, Mode and Grace are as in lab.Spec.
	Placement lab.Placement `json:"cpus"`
	Mode      lab.Mode      `json:"mode"`
	Grace     time.Duration `json:"-"` // JSON: "grace_s", seconds
	// ServerCPU caps the server's CPU time, in CPUs (lab.Spec.ServerCPU);
	// 0 leaves it unlimited.
	ServerCPU float64 `json:"server_cpu,omitempty"`
	// StartTimeout bounds the wait for the server to accept on its
	// addresses (lab.Spec.Ready; 0: DefaultStartTimeout, at most
	// MaxStartTimeout). A server that does not is a *target.StartError.
	StartTimeout time.Duration `json:"-"` // JSON: "start_timeout_s", seconds
	// Interrupt, when closed, winds the run down (lab.Spec.Interrupt): the
	// load generator stops and reports what it measured, and RunCell
	// returns the result, invalid, as "interrupted". Nil never does.
	Interrupt <-chan struct{} `json:"-"`
	// Dir is the directory the cell's files go to; it is created if
	// missing, and must be writable by the lab (the same file system).
	Dir string `json:"dir"`
}

// design is the reference design the cell runs; "" for a command.
func (cell CellSpec) design() reactors.DesignName { return reactors.DesignName(cell.Target.Design()) }

type plainCell CellSpec

// cellJSON is CellSpec's JSON: the target under the key of its kind, and
// Grace and StartTimeout in seconds, as lab.Spec's durations. Reactor,
// ServeArgs and Command come before the embedded fields so that the keys
// keep the order of the struct's fields ("reactor", "serve_args",
// "target", "load", ...); ServeArgs is written and read here, the
// embedded one being hidden by it (encoding/json keeps the shallower of
// two fields with one key).
type cellJSON struct {
	Reactor   string   `json:"reactor,omitempty"`
	ServeArgs []string `json:"serve_args,omitempty"`
	Command   string   `json:"target,omitempty"`
	*plainCell
	Grace        jsontime.Seconds `json:"grace_s,omitempty"`
	StartTimeout jsontime.Seconds `json:"start_timeout_s,omitempty"`
}

// MarshalJSON writes the cell with its target under "reactor" (a design)
// or "target" (a command), and Grace and StartTimeout in seconds
// ("grace_s", "start_timeout_s").
func (c CellSpec) MarshalJSON() ([]byte, error) {
	return json.Marshal(cellJSON{Reactor: c.Target.Design(), ServeArgs: c.ServeArgs, Command: c.Target.Command(),
		plainCell: (*plainCell)(&c), Grace: jsontime.Seconds(c.Grace), StartTimeout: jsontime.Seconds(c.StartTimeout)})
}

// UnmarshalJSON reads what MarshalJSON writes; a record with both
// "reactor" and "target" names two targets, and is refused.
func (c *CellSpec) UnmarshalJSON(b []byte) error {
	j := cellJSON{plainCell: (*plainCell)(c)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Reactor != "" && j.Command != "" {
		return fmt.Errorf("cell: both reactor %q and target %q (accepted: one of them)", j.Reactor, j.Command)
	}
	c.Target = target.Design(j.Reactor)
	if j.Command != "" {
		c.Target = target.Command(j.Command)
	}
	c.ServeArgs = j.ServeArgs
	c.Grace, c.StartTimeout = time.Duration(j.Grace), time.Duration(j.StartTimeout)
	return nil
}

// CellResult is the outcome of one cell: the lab's record of both
// processes, the load generator's summary and, for a reference reactor, its
// final statistics.
type CellResult struct {
	// Cell is the cell as it ran: its directory absolute, its ServeArgs
	// filled in.
	Cell CellSpec `json:"cell"`
	// Lab is the run's record: mode, placement, CPU and memory per side,
	// audit.
	Lab *lab.Result `json:"lab"`
	// Load is the load generator's summary (nil if it did not produce one).
	Load *loadgen.Summary `json:"load,omitempty"`
	// Server is a reference reactor's final output (nil for a black box or
	// if it printed none).
	Server *roles.ServeOutput `json:"server,omitempty"`
	// Placed is where each side's loop threads ran, loop by loop, as
	// verified against every thread's sampled masks (nil without a lab
	// record).
	Placed *Placed `json:"placed,omitempty"`
	// CPUBusy is the busy fraction of each pinned side's CPUs over the
	// measured period (nil without a measured period).
	CPUBusy *CPUBusy `json:"cpu_busy,omitempty"`
	// LoopTimes is the server's threads' time over the measured period,
	// from the lab's samples of its process group (lab.ProcResult.Threads):
	// per loop thread the shares of the period waiting, serving, blocked
	// (in which call) and runnable, the other threads summed; for a
	// reference reactor and a black box alike. Nil when there is no
	// measured period or no record inside it, and LoopTimesNote says why.
	LoopTimes     *diagnose.LoopTimes `json:"loop_times,omitempty"`
	LoopTimesNote string              `json:"loop_times_note,omitempty"`
	// Valid is true when Invalid is empty: the lab run and the measurement
	// were both valid. Invalid gathers the reasons of both.
	Valid   bool     `json:"valid"`
	Invalid []string `json:"invalid,omitempty"`
}

// AcceptQueue is the lab's record of the server's listen queues (nil when
// the run took none). The record travels in the server's lab.ProcResult as
// "accept_queue"; it is read through its JSON form so that this accessor
// is the one place that knows where it is kept.
func (r *CellResult) AcceptQueue() *lab.AcceptQueue {
	if r.Lab == nil || r.Lab.Server == nil {
		return nil
	}
	return r.Lab.Server.AcceptQueue
}

// AcceptQueuePeak is the server's accept queue peak over the measured
// period (lab.AcceptQueue.PeakBetween); false without a record, a measured
// period, or a bucket inside it.
func (r *CellResult) AcceptQueuePeak() (lab.AcceptQueuePeak, bool) {
	q := r.AcceptQueue()
	if q == nil || r.Load == nil || r.Load.MeasuredS <= 0 {
		return lab.AcceptQueuePeak{}, false
	}
	from := r.Load.StartTime.Add(r.Cell.Load.WithDefaults().Warmup)
	return q.PeakBetween(from, from.Add(time.Duration(r.Load.MeasuredS*float64(time.Second))))
}
