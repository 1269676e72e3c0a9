package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/target"
)

// Verdict is a case's outcome.
type Verdict string

// The verdicts. A case that cannot run on a target is skipped with its
// reason, never passed. A case that ran but could not establish what its
// claim needs (a limit in force, data queued in the server, a table full)
// is inconclusive, with the reason: that is neither a pass nor a failure,
// and it is counted apart from both. A run cancelled (its context ended:
// SIGINT or SIGTERM for the command) judges nothing it had not finished:
// the case then running is Interrupted, the cases after it NotRun.
const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	Skip         Verdict = "skip"
	Inconclusive Verdict = "inconclusive"
	Interrupted  Verdict = "interrupted"
	NotRun       Verdict = "not-run"
)

// Cause says what a failure is about: the case's claim, or the run
// around it. Only a claim failure says something about the target's
// design; the others say it could not be tested (or crashed). An
// interrupted run is no failure: see the verdicts Interrupted and NotRun.
type Cause string

// The causes of a failure.
const (
	CauseClaim   Cause = "claim"   // the case's own check failed
	CauseTarget  Cause = "target"  // did not start, or ended badly (crash, kill, error)
	CauseTimeout Cause = "timeout" // no verdict within the case's bound: a stall
	CauseSuite   Cause = "suite"   // the case's code panicked: a suite bug
)

// Result is one case's outcome on one target.
type Result struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Verdict  Verdict       `json:"verdict"`
	Cause    Cause         `json:"cause,omitempty"`    // for failures
	Reason   string        `json:"reason,omitempty"`   // skip or inconclusive reason, or the failure
	Evidence []string      `json:"evidence,omitempty"` // what was sent, what came back, counters
	Log      []string      `json:"log,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// AtStop, when not empty, is how the instance ended badly once it was
	// signalled to stop after the case (Final.AtStop): a crash, an exit
	// status other than 0 or 128 + SIGTERM, a kill after the grace period.
	// It is a finding of its own about the target's stop, counted apart
	// (Summary.StopFindings) and never part of the verdict, which judges
	// the case's claim alone.
	AtStop string `json:"at_stop,omitempty"`
	// ByDesign marks an inconclusive case whose precondition the server
	// was seen, with positive evidence on every try, never to offer: a
	// property of its design, which gives the same verdict every run (the
	// reason says what was seen; a server that could offer it but never
	// did on those tries, by a draw of timing, may show it too), unlike a precondition this run merely failed to
	// establish (a client starved of CPU, a draw of timing). Options.Strict
	// and conform --strict do not fail it. False for every other verdict.
	ByDesign bool `json:"by_design,omitempty"`
	// Attempts is how many times the case ran, when more than once
	// (Options.Retries): every attempt before the last ended inconclusive,
	// not by design, and its reason is in Log; Duration is every
	// attempt's. 0 for a case run once.
	Attempts int `json:"attempts,omitempty"`
}

// C is a running case: its instance, its deadline and its findings. Its
// exported methods are the whole API a case is written against (the
// catalogue, package conformance/cases, reaches nothing else of the
// runner): what the case may read of its run (Context, Instance,
// Reference, FdLimit, StopGrace, StopContract), what it records (Logf, Evidencef), how
// it ends (Errorf, Fatalf, Skipf, Inconclusivef, InconclusiveByDesignf,
// Failed) and what it leaves to the runner (Cleanup, HangUpOnStop, Stop).
// Fatalf, Skipf, Inconclusivef and InconclusiveByDesignf end the case (like testing.T, they must be called from
// the case's own goroutine).
type C struct {
	ctx  context.Context
	inst Instance

	mu       sync.Mutex
	verdict  Verdict
	cause    Cause
	reason   string
	byDesign bool
	evidence []string
	log      []string
	final    *Final
	stopErr  error
	cleanups []func()
	// hangUps close the case's client connections (HangUpOnStop); Stop
	// runs them first.
	hangUps []func()
	stopMu  sync.Mutex // held across inst.Stop: one stop, others wait for it
	// stopGrace is the stop contract's grace period (Options.StopGrace).
	stopGrace time.Duration
	// stop is the stop contract the run opted in to (Options.Stop).
	stop StopContract
	// fdLimit is the descriptor limit in force in the instance's serving
	// processes: the case's Setup.FdLimit, or, for a target that could not
	// start under it, the one applied once it was ready (startThenLimit);
	// 0 when the case set none.
	fdLimit uint64
}

// startThenLimit starts target without setup's descriptor limit, after a
// start under it failed with underErr, and once the instance is ready
// applies a limit to every process holding its listener (limitServing):
// setup's, or more if one of them already holds nearly that many. It
// returns the instance, the limit in force and a note for the evidence,
// or an error saying both why the start under the limit failed and why
// this did.
func startThenLimit(ctx context.Context, target Target, setup Setup, bound time.Duration, underErr error) (Instance, uint64, string, error) {
	want := setup.FdLimit
	setup.FdLimit = 0
	inst, err := StartInstance(ctx, target, setup, bound)
	if err != nil {
		return nil, 0, "", underErr
	}
	limit, applied, held, err := limitServing(inst, want)
	if err != nil {
		_, _ = inst.Stop()
		return nil, 0, "", fmt.Errorf("%w; started without it, the limit could not be applied once ready: %v", underErr, err)
	}
	note := fmt.Sprintf("the target did not start under a descriptor limit of %d (%v); started without it, it was given a limit of %d once ready, in the %d processes holding its listener (pids %v; they held at most %d descriptors then)",
		want, firstLine(underErr.Error()), limit, len(applied), applied, held)
	return inst, limit, note, nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// HangUpOnStop registers a client connection's hang-up for Stop to run
// before it stops the instance: a server that drains on SIGTERM (waits
// for each client's EOF, within its grace) is then not kept waiting by
// connections the case no longer reads.
func (c *C) HangUpOnStop(hangUp func()) {
	c.mu.Lock()
	c.hangUps = append(c.hangUps, hangUp)
	c.mu.Unlock()
}

// Cleanup registers fn to run when the case's code returns (last
// registered first), before the instance is stopped.
func (c *C) Cleanup(fn func()) {
	c.mu.Lock()
	c.cleanups = append(c.cleanups, fn)
	c.mu.Unlock()
}

func (c *C) runCleanups() {
	c.mu.Lock()
	fns := c.cleanups
	c.cleanups = nil
	c.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// Context is cancelled when the case's time is up.
func (c *C) Context() context.Context { return c.ctx }

// Instance is the target instance the case runs on.
func (c *C) Instance() Instance { return c.inst }

// Reference is the instance's reference reactor, nil for a black box.
func (c *C) Reference() *Reference { return c.inst.Reference() }

// FdLimit is the descriptor limit in force in the instance's serving
// processes: the case's Setup.FdLimit, or, for a target that could not
// start under it, the one applied once it was ready (at least as high);
// 0 when the case set none.
func (c *C) FdLimit() uint64 { return c.fdLimit }

// StopGrace is the stop contract's grace period (Options.StopGrace, or
// DefaultStopGrace): how long the target may take, after SIGTERM, to
// answer what it has read and close every connection.
func (c *C) StopGrace() time.Duration { return c.stopGrace }

// StopContract is the stop contract the run opted in to (Options.Stop;
// "" for none): a case that can tear a server down in more than one way
// (P4: STOP, or SIGTERM) uses SIGTERM only where the run opted in to it.
func (c *C) StopContract() StopContract { return c.stop }

// Logf records a line shown with the result.
func (c *C) Logf(format string, args ...any) {
	c.mu.Lock()
	c.log = append(c.log, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// Evidencef records a fact shown with a failure: what was sent, what came
// back, the counters.
func (c *C) Evidencef(format string, args ...any) {
	c.mu.Lock()
	c.evidence = append(c.evidence, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// Errorf marks the case failed (its claim does not hold) and goes on.
func (c *C) Errorf(format string, args ...any) {
	c.fail(CauseClaim, fmt.Sprintf(format, args...))
}

// fail records a failure; the first failure's cause is the case's.
func (c *C) fail(cause Cause, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verdict != Fail {
		c.verdict, c.cause, c.reason = Fail, cause, msg
	} else {
		c.reason += "; " + msg
	}
}

// Fatalf marks the case failed and ends it.
func (c *C) Fatalf(format string, args ...any) {
	c.Errorf(format, args...)
	runtime.Goexit()
}

// Skipf ends the case as skipped with the reason (unless it already failed).
func (c *C) Skipf(format string, args ...any) { c.endAs(Skip, format, args...) }

// Inconclusivef ends the case as inconclusive (unless it already failed):
// it ran, but could not establish the precondition its claim needs, so it
// says nothing either way. The reason names what was missing.
func (c *C) Inconclusivef(format string, args ...any) { c.endAs(Inconclusive, format, args...) }

// InconclusiveByDesignf ends the case as inconclusive (unless it already
// failed) because the server was seen, with positive evidence, never to
// offer the precondition its claim needs: its design, not this run's
// luck (Result.ByDesign). The reason names both signals that show it.
func (c *C) InconclusiveByDesignf(format string, args ...any) {
	c.mu.Lock()
	if c.verdict != Fail {
		c.byDesign = true
	}
	c.mu.Unlock()
	c.endAs(Inconclusive, format, args...)
}

// endAs ends the case with verdict v and the reason, unless it already
// failed (a failure is never undone).
func (c *C) endAs(v Verdict, format string, args ...any) {
	c.mu.Lock()
	if c.verdict != Fail {
		c.verdict, c.reason = v, fmt.Sprintf(format, args...)
	}
	c.mu.Unlock()
	runtime.Goexit()
}

// Failed reports whether the case has failed so far.
func (c *C) Failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verdict == Fail
}

// Stop stops the instance once and returns what it left; a failure to stop
// cleanly fails the case. Concurrent calls wait for the one stop.
func (c *C) Stop() Final {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	c.mu.Lock()
	if c.final != nil {
		f := *c.final
		c.mu.Unlock()
		return f
	}
	hangUps := c.hangUps
	c.hangUps = nil
	c.mu.Unlock()
	for _, hangUp := range hangUps {
		hangUp()
	}
	f, err := c.inst.Stop()
	c.mu.Lock()
	c.final, c.stopErr = &f, err
	c.mu.Unlock()
	if err != nil {
		c.fail(CauseTarget, fmt.Sprintf("stopping the target: %v", err))
	} else if !f.Clean {
		c.fail(CauseTarget, "the target ended badly during the case: "+f.Exit)
	}
	return f
}

// Options shape a run of cases: its bounds, the start check, progress,
// strictness and the stop contract.
type Options struct {
	// Timeout, when positive, bounds each case from the start of its
	// instance to its verdict (the start included, so a target that never
	// becomes ready is bounded by it too). 0: the case's own bound, its
	// clock starting once the instance is up, the start bounded by
	// StartTimeout.
	Timeout time.Duration
	// StartTimeout bounds each start of the target, the check's and every
	// case's (0: DefaultStartTimeout). A target that compiles on its first
	// start (go run on a cold build cache) may need more.
	StartTimeout time.Duration
	// NoStartCheck skips the check RunAll and Run make before any case
	// (CheckStart): for a caller that made it itself.
	NoStartCheck bool
	// Progress, when set, is called after each case that ran (interrupted
	// included).
	Progress func(Result)
	// Strict makes Run fail the subtest of an inconclusive case instead of
	// skipping it: for a target whose preconditions must hold (this
	// project's reference reactors, or your own server in CI). An
	// inconclusive case whose precondition the server's design never
	// offers (Result.ByDesign) is skipped all the same: it is the same
	// every run, and says so.
	Strict bool
	// Stop opts in to a stop contract: the cases that hold a target to it
	// (X3, X4, X5) run only when it is set, and are skipped otherwise,
	// saying so. "" (none) or StopSIGTERM.
	Stop StopContract
	// StopGrace is the stop contract's grace period: how long a target
	// may take, after SIGTERM, to answer what it has read and close every
	// connection (0: DefaultStopGrace).
	StopGrace time.Duration
	// Retries, when positive, runs a case that ended inconclusive again,
	// on a fresh instance, up to Retries more times, and keeps the first
	// conclusive result: on a machine that is not quiet, whether a
	// precondition is established is often a draw of timing (a client
	// starved of CPU, a descriptor number the kernel did not reuse). A
	// case that passed or failed is never run again, nor one inconclusive
	// by design (Result.ByDesign: the same every run) or interrupted, so a
	// retry can turn an inconclusive into a verdict, never a failure into
	// a pass. Result.Attempts counts the runs.
	Retries int
}

// StopContract names a stop contract a target may be held to.
type StopContract string

// StopSIGTERM is the contract of SIGTERM: the server stops accepting (new
// connections are refused), answers what it has read, and closes each
// connection with FIN, not RST, within the grace period.
const StopSIGTERM StopContract = "sigterm"

// DefaultStopGrace is Options.StopGrace's default.
const DefaultStopGrace = 5 * time.Second

// caseRun is how one case is run: the bounds of Options, and the stop
// contract with its grace.
type caseRun struct {
	timeout, startTimeout time.Duration
	stop                  StopContract
	stopGrace             time.Duration
}

// caseRun is the run of one case under o.
func (o Options) caseRun() caseRun {
	r := caseRun{timeout: o.Timeout, startTimeout: o.StartTimeout, stop: o.Stop, stopGrace: o.StopGrace}
	if r.stopGrace <= 0 {
		r.stopGrace = DefaultStopGrace
	}
	return r
}

// caseTimeout is cs's own bound under r: a stop-contract case waits out
// the grace period (twice, at most, with the probes after it), so its
// bound grows with it.
func (r caseRun) caseTimeout(cs Case) time.Duration {
	if cs.Needs&NeedStopContract != 0 {
		return max(cs.timeout(), 2*r.stopGrace+20*time.Second)
	}
	return cs.timeout()
}

// RunAll runs cases one after another, in their order (never in
// parallel: the timing bounds assume the target has the machine to
// itself), and returns every result, in that order; no cases is an
// error. Unless opts.NoStartCheck, it first starts the target once
// (CheckStart): if that fails, no case runs and the error is the
// *target.StartError. When ctx is cancelled the case then running is
// Interrupted and every case after it NotRun (all of them when the check
// was interrupted), with a nil error: an interrupted run never looks like
// a pass, nor like a failure.
func RunAll(ctx context.Context, target Target, cases []Case, opts Options) ([]Result, error) {
	if len(cases) == 0 {
		return nil, errNoCases
	}
	if !opts.NoStartCheck {
		if err := CheckStart(ctx, target, opts.StartTimeout); err != nil && ctx.Err() == nil {
			return nil, err
		}
	}
	var results []Result
	for _, cs := range cases {
		if ctx.Err() != nil {
			results = append(results, notRun(cs))
			continue
		}
		r := runRetrying(ctx, target, cs, opts)
		results = append(results, r)
		if opts.Progress != nil {
			opts.Progress(r)
		}
	}
	return results, nil
}

// errNoCases is a run given no case to run.
var errNoCases = errors.New("no case to run")

// notRun is the result of a case an interrupted run did not reach.
func notRun(cs Case) Result {
	return Result{ID: cs.ID, Title: cs.Title, Verdict: NotRun, Reason: "not run: the run was interrupted before it"}
}

// stopBound bounds a stop after the watchdog fired (the target may be
// wedged: the run goes on and says so).
const stopBound = 30 * time.Second

// RunCase runs one case on a fresh instance of target under a watchdog.
// A positive timeout bounds the case from the start of its instance (the
// start included) to its verdict; with timeout 0 the case's own bound
// applies, its clock starting once the instance is up, and the start is
// bounded by DefaultStartTimeout. A case whose instance does not start
// fails with cause target (timeout, when it was the case's timeout that
// ran out), or is inconclusive when the case set a descriptor limit. If
// ctx ends while the case runs, its verdict is Interrupted (NotRun if it
// ended before), whatever the case had found by then.
func RunCase(ctx context.Context, target Target, cs Case, timeout time.Duration) Result {
	return runCase(ctx, target, cs, Options{Timeout: timeout}.caseRun())
}

// runRetrying runs cs under o, again while it ends inconclusive (not by
// design) and o.Retries allows: the last result, with the earlier
// attempts' reasons first in its log, their durations in its own, and a
// stop finding of any attempt kept.
func runRetrying(ctx context.Context, t Target, cs Case, o Options) Result {
	r := runCase(ctx, t, cs, o.caseRun())
	var earlier []string
	spent, atStop := r.Duration, r.AtStop
	for range max(o.Retries, 0) {
		if r.Verdict != Inconclusive || r.ByDesign || ctx.Err() != nil {
			break
		}
		earlier = append(earlier, fmt.Sprintf("attempt %d inconclusive (run again: Options.Retries): %s", len(earlier)+1, r.Reason))
		r = runCase(ctx, t, cs, o.caseRun())
		spent += r.Duration
		if atStop == "" {
			atStop = r.AtStop
		}
	}
	if len(earlier) > 0 {
		r.Attempts = len(earlier) + 1
		r.Log = append(earlier, r.Log...)
		r.Duration = spent
		r.AtStop = atStop
	}
	return r
}

func runCase(ctx context.Context, t Target, cs Case, run caseRun) Result {
	start := time.Now()
	res := Result{ID: cs.ID, Title: cs.Title}
	if ctx.Err() != nil {
		return notRun(cs)
	}
	timeout, startTimeout := run.timeout, run.startTimeout
	if startTimeout <= 0 {
		startTimeout = DefaultStartTimeout
	}
	startBound, whole := startTimeout, timeout > 0
	if whole {
		startBound = min(startBound, timeout)
	} else {
		timeout = run.caseTimeout(cs)
	}
	inst, err := StartInstance(ctx, t, cs.Setup, startBound)
	fdLimit, limitNote := cs.Setup.FdLimit, ""
	if se := (*target.StartError)(nil); err != nil && cs.Setup.FdLimit > 0 && ctx.Err() == nil && errors.As(err, &se) && se.Cause == target.StartExited {
		// A runtime that needs more descriptors than the case's limit to
		// start (HAProxy sizes its tables by maxconn) exits before it
		// listens: it is started without the limit, which is applied once
		// it is ready, to every process holding its listener.
		inst, fdLimit, limitNote, err = startThenLimit(ctx, t, cs.Setup, startBound, err)
	}
	if err != nil {
		res.Duration = time.Since(start)
		res.Verdict, res.Cause, res.Reason = startFailure(ctx, cs, err, whole, startBound, timeout)
		return res
	}
	started := time.Since(start)
	bound := timeout
	if whole {
		bound = max(timeout-started, 0)
	}
	caseCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	c := &C{ctx: caseCtx, inst: inst, verdict: Pass, stopGrace: run.stopGrace, stop: run.stop, fdLimit: fdLimit}
	if limitNote != "" {
		c.Evidencef("%s", limitNote)
	}
	interrupted := false
	if reason := cs.unmet(inst, run.stop); reason != "" {
		c.verdict, c.reason = Skip, reason
		c.Stop()
	} else {
		interrupted = c.supervise(ctx, caseCtx, cs, timeout, whole, started)
	}
	c.Stop()
	c.collect(&res, start, interrupted)
	return res
}

// startFailure is the verdict of a case whose instance did not start
// (err from StartInstance, within startBound): skipped if the target
// cannot do what the case needs, interrupted if ctx ended, inconclusive
// under the case's own descriptor limit, a timeout if the case's whole
// bound (timeout, whole) ran out while waiting for connections, else a
// failure of the target.
func startFailure(ctx context.Context, cs Case, err error, whole bool, startBound, timeout time.Duration) (Verdict, Cause, string) {
	var se *target.StartError
	switch {
	case errors.Is(err, ErrUnsupported):
		return Skip, "", err.Error()
	case ctx.Err() != nil:
		return Interrupted, "", "the run was interrupted while the target was starting: no verdict"
	case cs.Setup.FdLimit > 0:
		// The case's own limit may be what stops it (a runtime that
		// needs more descriptors to start): nothing was tested.
		return Inconclusive, "", fmt.Sprintf("the target did not start under the case's descriptor limit of %d: %v", cs.Setup.FdLimit, err)
	case whole && startBound == timeout && errors.As(err, &se) && se.Cause == target.StartNoListener:
		return Fail, CauseTimeout, fmt.Sprintf("no verdict within %v (the case's time bound): the target did not accept connections in that time: %v", timeout, err)
	default:
		return Fail, CauseTarget, "target did not start: " + err.Error()
	}
}

// supervise runs cs in a goroutine of its own, a panic there failing the
// case as a suite bug, until it returns or caseCtx ends. If caseCtx ends
// first it fails the case on its time bound (unless ctx ended: then the
// run was interrupted) and abandons it. It reports whether ctx had ended
// by then: what the case found is then no verdict.
func (c *C) supervise(ctx, caseCtx context.Context, cs Case, timeout time.Duration, whole bool, started time.Duration) (interrupted bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.runCleanups()
		defer func() {
			if p := recover(); p != nil {
				c.fail(CauseSuite, fmt.Sprintf("the case panicked (a suite bug): %v\n%s", p, debug.Stack()))
			}
		}()
		cs.Run(c)
	}()
	select {
	case <-done:
	case <-caseCtx.Done():
		if ctx.Err() == nil {
			msg := fmt.Sprintf("no verdict within %v (the case's time bound): the target stalled", timeout)
			if whole {
				msg = fmt.Sprintf("no verdict within %v (the case's time bound, from the start of its target, which took %v to accept connections): the target stalled", timeout, started.Round(time.Millisecond))
			}
			c.fail(CauseTimeout, msg)
		}
		c.abandon(done)
	}
	// A case that ended once the run was cancelled may have seen its
	// connections cut or its context end: what it found is no verdict.
	return ctx.Err() != nil
}

// abandon ends a case that did not return in time: it stops the target
// and closes the case's connections, which makes every blocked client
// call return (within stopBound, or the target is failed), runs the
// cleanups and waits for the case's goroutine to close done (10 s, or it
// is a suite bug).
func (c *C) abandon(done <-chan struct{}) {
	stopped := make(chan struct{})
	go func() { c.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(stopBound):
		c.fail(CauseTarget, fmt.Sprintf("the target did not stop within %v", stopBound))
	}
	c.runCleanups()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.fail(CauseSuite, "case still running 10 s after the target stopped: suite bug")
	}
}

// collect fills res with what the case found, the final counters on a
// failure, and its duration from start; interrupted makes it Interrupted.
func (c *C) collect(res *Result, start time.Time, interrupted bool) {
	c.mu.Lock()
	res.Verdict, res.Cause, res.Reason = c.verdict, c.cause, c.reason
	res.ByDesign = c.byDesign && c.verdict == Inconclusive
	res.Evidence, res.Log = c.evidence, c.log
	if c.final != nil {
		res.AtStop = c.final.AtStop
	}
	if res.Verdict == Fail && c.final != nil && c.final.Stats != nil {
		res.Evidence = append(res.Evidence, "final counters: "+CounterLine(c.final.Stats.Counters))
	}
	c.mu.Unlock()
	res.Duration = time.Since(start)
	if interrupted {
		res.Verdict, res.Cause, res.ByDesign = Interrupted, "", false
		res.Reason = fmt.Sprintf("the run was interrupted %v into the case: no verdict", res.Duration.Round(time.Millisecond))
	}
}

// Run runs cases against target as subtests of t, one per case, in
// their order: a failure fails the subtest with its evidence, a skip
// skips it with the reason, and an inconclusive case skips it with
// "INCONCLUSIVE: " and the reason (it proved nothing), or fails it with
// Options.Strict unless the server's design never offers the precondition
// (Result.ByDesign: "INCONCLUSIVE (the server's design): "). No cases fails t. Unless Options.NoStartCheck, the
// target is started once first (CheckStart): a target that cannot start
// fails t once, saying why, and no subtest runs.
//
// Each subtest is named by SubtestName (the case's id, then its title:
// "W4_a_half-closed_peer_..."), so -run 'TestX/W4' selects a case by its
// id. Run marks itself and its subtests as test helpers: what they log
// and report points at the caller's line, the call of Run. Once every
// subtest has run, t logs one line counting the verdicts of the cases
// that ran (SummaryLine).
func Run(t *testing.T, target Target, cases []Case, opts ...Options) {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if len(cases) == 0 {
		t.Fatal(errNoCases)
	}
	if !o.NoStartCheck {
		if err := CheckStart(context.Background(), target, o.StartTimeout); err != nil {
			t.Fatalf("the target did not start, so no case was run: %v", err)
		}
	}
	var atStop []string
	var results []Result
	for _, cs := range cases {
		t.Run(SubtestName(cs), func(t *testing.T) {
			t.Helper()
			r := runRetrying(context.Background(), target, cs, o)
			results = append(results, r)
			for _, l := range r.Log {
				t.Log(l)
			}
			if r.AtStop != "" {
				t.Logf("when stopped after the case, the target ended badly (a finding of its own, reported by subtest %s, not this case's): %s", stopSubtest, r.AtStop)
				atStop = append(atStop, cs.ID+": "+r.AtStop)
			}
			switch r.Verdict {
			case Skip:
				t.Skip(r.Reason)
			case Inconclusive:
				if o.Strict && !r.ByDesign {
					t.Errorf("%s %s: INCONCLUSIVE: %s\n%s", cs.ID, cs.Title, r.Reason, strings.Join(r.Evidence, "\n"))
					return
				}
				// Neither a pass nor a failure: the test says so and skips.
				if r.ByDesign {
					t.Skip("INCONCLUSIVE (the server's design): " + r.Reason)
				}
				t.Skip("INCONCLUSIVE: " + r.Reason)
			case Fail:
				t.Errorf("%s %s: %s\n%s", cs.ID, cs.Title, r.Reason, strings.Join(r.Evidence, "\n"))
			case Interrupted, NotRun:
				t.Skip(r.Reason)
			}
		})
	}
	if len(atStop) > 0 {
		t.Run(stopSubtest, func(t *testing.T) {
			t.Helper()
			t.Errorf("the target ended badly when it was stopped after %d of the cases (each case's verdict judges its claim alone):\n%s", len(atStop), strings.Join(atStop, "\n"))
		})
	}
	t.Log(SummaryLine(target.Name(), Summarize(results)))
}

// SubtestName is the name of cs's subtest in Run: its id, an
// underscore, and its title with every run of characters other than
// ASCII letters, digits and '-' turned into one underscore (apostrophes
// dropped): "W4_a_half-closed_peer_that_does_not_read_does_not_freeze_the_others".
// It starts with the id, so go test's -run, which matches each element
// of a subtest's name unanchored, selects a case by its id ('TestX/W4';
// 'TestX/^W4_' selects that id alone where one id is the prefix of
// another), and it holds no '/' or space, so go test prints it as it is.
func SubtestName(cs Case) string {
	var b strings.Builder
	b.WriteString(cs.ID)
	sep := true // an underscore is owed before the next kept character
	for _, r := range cs.Title {
		switch {
		case r == '\'' || r == '’':
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			if sep {
				b.WriteByte('_')
				sep = false
			}
			b.WriteRune(r)
		default:
			sep = true
		}
	}
	return b.String()
}

// SummaryLine is the line Run logs once its subtests have run:
// "conformance: 17 passed, 11 skipped, 2 inconclusive, 0 failed on lt",
// each verdict counted apart (the inconclusive ones the server's design
// explains said among them), then the runs that ended interrupted or
// were not run and the stops at which the target ended badly, when there
// were any.
func SummaryLine(target string, s Summary) string {
	line := fmt.Sprintf("conformance: %d passed, %d skipped, %d inconclusive", s.Pass, s.Skip, s.Inconclusive)
	if s.ByDesign > 0 {
		line += fmt.Sprintf(" (%d of them by the server's design)", s.ByDesign)
	}
	line += fmt.Sprintf(", %d failed", s.Fail)
	if s.WasInterrupted() {
		line += fmt.Sprintf(", %d interrupted, %d not run", s.Interrupted, s.NotRun)
	}
	line += " on " + target
	if s.StopFindings > 0 {
		line += fmt.Sprintf("; the target ended badly when stopped after %d of the cases (subtest %s)", s.StopFindings, stopSubtest)
	}
	return line
}

// stopSubtest names the subtest of Run that fails when the target ended
// badly at a stop (Result.AtStop): a finding apart from every case's.
const stopSubtest = "at-stop"
