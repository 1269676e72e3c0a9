//go:build linux

package matrix

import (
	"context"
	"errors"
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/target"
)

// ErrStart is wrapped when a black-box target of a plan could not be
// started (CheckStarts).
var ErrStart = errors.New("matrix: target could not be started")

// StartRefusal is CheckStarts' error: the black-box command a spec gives
// at Line and Field (the cell's value, or the baseline's target) could
// not be started, for Start's cause. It wraps ErrStart, ErrSpec and Start.
type StartRefusal struct {
	Line  int
	Field string
	// Start says why: conformance.CheckStart's failure, its Target the
	// command as the spec writes it ("cmd:./srv {addr}").
	Start *target.StartError
}

// Error is "line N: FIELD: " and Start's text.
func (e *StartRefusal) Error() string {
	return fmt.Sprintf("line %d: %s: %v", e.Line, e.Field, e.Start)
}

// Unwrap returns ErrStart, ErrSpec and Start.
func (e *StartRefusal) Unwrap() []error { return []error{ErrStart, ErrSpec, e.Start} }

// CheckStarts starts each distinct black-box command of the plans of
// opts (each its Spec's shard Options.Shard) once, before any run, with
// the check `reactorlab conform` makes before its cases
// (conformance.CheckStart: started as a run starts it, through
// harness.ShellArgv, bounded by Options.StartTimeout, 0 for
// conformance.DefaultStartTimeout, stopped with Options.Grace), so that
// a target that exits, is missing, listens elsewhere or never listens is
// refused once, not found invalid run after run, each waiting out its
// bound. Reference designs need no check: the spec's checks (Check)
// refuse what their server would. It returns nil, a *StartRefusal at the
// first command (in plan order) that could not be started, or an error
// wrapping ctx's when ctx ended first. Every process it starts has been
// stopped when it returns. Run does not call it: a caller that runs
// several specs calls it once for them all, before the first
// (reactorlab matrix does, and before a resume continues).
func CheckStarts(ctx context.Context, opts ...Options) error {
	seen := map[string]bool{}
	for _, opt := range opts {
		if opt.Spec == nil {
			return errors.New("matrix: no spec")
		}
		for _, p := range opt.Spec.Plan(opt.Shard.orAll()) {
			cmd := p.Cell.Target.Command()
			if cmd == "" || seen[cmd] {
				continue
			}
			seen[cmd] = true
			t := conformance.Command{Argv: harness.ShellArgv(cmd), Grace: opt.Grace, Label: cmd}
			err := conformance.CheckStart(ctx, t, opt.StartTimeout)
			var sf *target.StartError
			switch {
			case err == nil:
				continue
			case ctx.Err() != nil:
				return fmt.Errorf("matrix: starting %s: %w", t.Name(), ctx.Err())
			case errors.As(err, &sf):
				return &StartRefusal{Line: p.Cell.at.line, Field: p.Cell.at.field, Start: sf}
			default:
				return fmt.Errorf("matrix: starting %s: %w", t.Name(), err)
			}
		}
	}
	return nil
}
