package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Link is the client end a plan acts on. Each method is one Op; see [TCPLink].
type Link interface {
	Write(p []byte) (int, error)
	CloseWrite() error
	Close() error
	Reset() error
	Reconnect() error
	// PauseReading stops reading for d from now, then resumes; it returns at once.
	PauseReading(d time.Duration)
}

// WriteDeadliner is an optional ability of a Link. When the link has it, Play
// sets a write deadline in the past once ctx is done, so that a write blocked on
// a peer that stopped reading returns, and clears it (zero time) before
// returning.
type WriteDeadliner interface {
	SetWriteDeadline(t time.Time) error
}

// StepError is the error of Play: which step failed and why.
type StepError struct {
	Index int // index of the step in the plan
	Op    Op
	Err   error
}

// Error returns "faults: step <index> (<op>): <underlying error>".
func (e *StepError) Error() string {
	return fmt.Sprintf("faults: step %d (%s): %v", e.Index, e.Op, e.Err)
}

// Unwrap returns the underlying error.
func (e *StepError) Unwrap() error { return e.Err }

// Play performs plan on link in order and returns nil or a *StepError. It stops
// before the first step that finds ctx done, and an OpSleep ends early when ctx
// is done: the error then wraps ctx.Err(). A write blocked when ctx ends is
// interrupted only on a link that is a WriteDeadliner; its error then wraps both
// ctx.Err() and the write's. An OpWrite with empty Data calls nothing. An
// undefined Op is an error.
func Play(ctx context.Context, link Link, plan []Step) error {
	if d, ok := link.(WriteDeadliner); ok {
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			_ = d.SetWriteDeadline(time.Unix(1, 0)) // a failure leaves the write to its own fate
			close(fired)
		})
		defer func() {
			if !stop() {
				<-fired
				_ = d.SetWriteDeadline(time.Time{})
			}
		}()
	}
	for i, s := range plan {
		err := ctx.Err()
		if err == nil {
			err = play(ctx, link, s)
			if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
		}
		if err != nil {
			return &StepError{Index: i, Op: s.Op, Err: err}
		}
	}
	return nil
}

func play(ctx context.Context, link Link, s Step) error {
	switch s.Op {
	case OpWrite:
		return writeAll(link, s.Data)
	case OpSleep:
		if s.For <= 0 {
			return nil
		}
		t := time.NewTimer(s.For)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case OpPauseReading:
		link.PauseReading(s.For)
		return nil
	case OpCloseWrite:
		return link.CloseWrite()
	case OpClose:
		return link.Close()
	case OpReset:
		return link.Reset()
	case OpReconnect:
		return link.Reconnect()
	}
	return errors.New("undefined op")
}

// writeAll writes p, retrying short writes as long as they make progress.
func writeAll(link Link, p []byte) error {
	for len(p) > 0 {
		n, err := link.Write(p)
		if err != nil {
			return err
		}
		if n <= 0 || n > len(p) {
			return fmt.Errorf("write returned %d of %d bytes and no error: %w", n, len(p), io.ErrNoProgress)
		}
		p = p[n:]
	}
	return nil
}
