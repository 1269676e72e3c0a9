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
)

// Verdict is a case's outcome.
type Verdict string

// The verdicts. A case that cannot run on a target is skipped with its
// reason, never passed. A case that ran but could not establish what its
// claim needs (a limit in force, data queued in the server, a table full)
// is inconclusive, with the reason: that is neither a pass nor a failure,
// and it is counted apart from both.
const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	Skip         Verdict = "skip"
	Inconclusive Verdict = "inconclusive"
)

// Cause says what a failure is about: the case's claim, or the run
// around it. Only a claim failure says something about the target's
// design; the others say it could not be tested (or crashed).
type Cause string

// The causes of a failure.
const (
	CauseClaim       Cause = "claim"       // the case's own check failed
	CauseTarget      Cause = "target"      // did not start, or ended badly (crash, kill, error)
	CauseTimeout     Cause = "timeout"     // no verdict within the case's bound: a stall
	CauseInterrupted Cause = "interrupted" // the run was cancelled
	CauseSuite       Cause = "suite"       // the case's code panicked: a suite bug
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
}

// C is a running case: its instance, its deadline and its findings. Fatalf
// and Skipf end the case (like testing.T, they must be called from the
// case's own goroutine).
type C struct {
	ctx  context.Context
	inst Instance

	mu       sync.Mutex
	verdict  Verdict
	cause    Cause
	reason   string
	evidence []string
	log      []string
	final    *Final
	stopErr  error
	cleanups []func()
	stopMu   sync.Mutex // held across inst.Stop: one stop, others wait for it
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

// usage samples the instance's consumption or fails the case: a missing
// measurement must never read as a pass.
func (c *C) usage() Usage {
	u, err := c.inst.Usage()
	if err != nil {
		c.Fatalf("measuring the server: %v", err)
	}
	return u
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
	c.mu.Unlock()
	f, err := c.inst.Stop()
	c.mu.Lock()
	c.final, c.stopErr = &f, err
	c.mu.Unlock()
	if err != nil {
		c.fail(CauseTarget, fmt.Sprintf("stopping the target: %v", err))
	} else if !f.Clean {
		c.fail(CauseTarget, "the target ended badly: "+f.Exit)
	}
	return f
}

// Options select and bound a run.
type Options struct {
	// Cases lists case ids to run ("F1", or a group letter "F"); empty runs
	// the whole catalogue.
	Cases []string
	// Timeout bounds each case (0: the case's own bound, at most 60 s).
	Timeout time.Duration
	// Progress, when set, is called after each case.
	Progress func(Result)
	// Strict makes Run fail the subtest of an inconclusive case instead of
	// skipping it: for a target whose preconditions must hold (this
	// project's reference reactors, or your own server in CI).
	Strict bool
}

// Select returns the catalogue entries named by ids (case ids or group
// letters), in catalogue order, or an error naming an unknown id.
func Select(ids []string) ([]Case, error) {
	all := Catalogue()
	if len(ids) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		id = strings.ToUpper(strings.TrimSpace(id))
		found := false
		for _, c := range all {
			if c.ID == id || c.Group() == id {
				found = true
			}
		}
		if !found {
			var known []string
			for _, c := range all {
				known = append(known, c.ID)
			}
			return nil, fmt.Errorf("unknown case %q (accepted: %s, or a group letter F R W I S T X)", id, strings.Join(known, " "))
		}
		want[id] = true
	}
	var out []Case
	for _, c := range all {
		if want[c.ID] || want[c.Group()] {
			out = append(out, c)
		}
	}
	return out, nil
}

// RunAll runs the selected cases one after another (never in parallel: the
// timing bounds assume the target has the machine to itself) and returns
// every result. Cases not reached because ctx was cancelled are failed
// with CauseInterrupted: an interrupted run never looks like a pass.
func RunAll(ctx context.Context, target Target, opts Options) ([]Result, error) {
	cases, err := Select(opts.Cases)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, cs := range cases {
		if ctx.Err() != nil {
			results = append(results, Result{ID: cs.ID, Title: cs.Title, Verdict: Fail, Cause: CauseInterrupted, Reason: "not run: " + ctx.Err().Error()})
			continue
		}
		r := RunCase(ctx, target, cs, opts.Timeout)
		results = append(results, r)
		if opts.Progress != nil {
			opts.Progress(r)
		}
	}
	return results, nil
}

// startBound bounds Target.Start (a `go run` target may compile first);
// stopBound bounds a stop after the watchdog fired (the target may be
// wedged: the run goes on and says so).
const (
	startBound = 60 * time.Second
	stopBound  = 30 * time.Second
)

// RunCase runs one case on a fresh instance of target, under a watchdog
// whose clock starts once the instance is up.
func RunCase(ctx context.Context, target Target, cs Case, timeout time.Duration) Result {
	start := time.Now()
	res := Result{ID: cs.ID, Title: cs.Title}
	if timeout <= 0 {
		timeout = cs.timeout()
	}
	startCtx, cancelStart := context.WithTimeout(ctx, startBound)
	inst, err := target.Start(startCtx, cs.Setup)
	cancelStart()
	if err != nil {
		res.Duration = time.Since(start)
		switch {
		case errors.Is(err, ErrUnsupported):
			res.Verdict, res.Reason = Skip, err.Error()
		case ctx.Err() != nil:
			res.Verdict, res.Cause, res.Reason = Fail, CauseInterrupted, "interrupted while starting the target: "+err.Error()
		case cs.Setup.FdLimit > 0:
			// The case's own limit may be what stops it (a runtime that
			// needs more descriptors to start): nothing was tested.
			res.Verdict, res.Reason = Inconclusive, fmt.Sprintf("the target did not start under the case's descriptor limit of %d: %v", cs.Setup.FdLimit, err)
		default:
			res.Verdict, res.Cause, res.Reason = Fail, CauseTarget, "target did not start: "+err.Error()
		}
		return res
	}
	caseCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &C{ctx: caseCtx, inst: inst, verdict: Pass}
	if reason := cs.unmet(inst); reason != "" {
		c.verdict, c.reason = Skip, reason
		c.Stop()
	} else {
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
			if ctx.Err() != nil {
				c.fail(CauseInterrupted, "interrupted")
			} else {
				c.fail(CauseTimeout, fmt.Sprintf("no verdict within %v (the case's time bound): the target stalled", timeout))
			}
			// Stopping the target and closing the case's connections makes
			// every blocked client call return.
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
		c.Stop()
	}
	c.mu.Lock()
	res.Verdict, res.Cause, res.Reason = c.verdict, c.cause, c.reason
	res.Evidence, res.Log = c.evidence, c.log
	if res.Verdict == Fail && c.final != nil && c.final.Stats != nil {
		res.Evidence = append(res.Evidence, "final counters: "+counterLine(c.final.Stats.Counters))
	}
	c.mu.Unlock()
	res.Duration = time.Since(start)
	return res
}

// Run runs the catalogue (or the cases opts name) against target as
// subtests of t, one per case: a failure fails the subtest with its
// evidence, a skip skips it with the reason, and an inconclusive case
// skips it with "INCONCLUSIVE: " and the reason (it proved nothing), or
// fails it with Options.Strict.
func Run(t *testing.T, target Target, opts ...Options) {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	cases, err := Select(o.Cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cases {
		t.Run(cs.ID, func(t *testing.T) {
			r := RunCase(context.Background(), target, cs, o.Timeout)
			for _, l := range r.Log {
				t.Log(l)
			}
			switch r.Verdict {
			case Skip:
				t.Skip(r.Reason)
			case Inconclusive:
				if o.Strict {
					t.Errorf("%s %s: INCONCLUSIVE: %s\n%s", cs.ID, cs.Title, r.Reason, strings.Join(r.Evidence, "\n"))
					return
				}
				// Neither a pass nor a failure: the test says so and skips.
				t.Skip("INCONCLUSIVE: " + r.Reason)
			case Fail:
				t.Errorf("%s %s: %s\n%s", cs.ID, cs.Title, r.Reason, strings.Join(r.Evidence, "\n"))
			}
		})
	}
}
