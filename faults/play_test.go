package faults_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/faults"
)

var errBoom = errors.New("boom")

// stubLink records the calls made on it; fail makes the named call fail with
// errBoom, and maxWrite > 0 caps every write at that many bytes.
type stubLink struct {
	calls    []string
	written  bytes.Buffer
	maxWrite int
	fail     string
}

func (l *stubLink) record(call string) error {
	l.calls = append(l.calls, call)
	if call == l.fail {
		return errBoom
	}
	return nil
}

func (l *stubLink) Write(p []byte) (int, error) {
	n := len(p)
	if l.maxWrite > 0 {
		n = min(n, l.maxWrite)
	}
	l.written.Write(p[:n])
	return n, l.record(fmt.Sprintf("write(%d)", n))
}

func (l *stubLink) CloseWrite() error { return l.record("close-write") }
func (l *stubLink) Close() error      { return l.record("close") }
func (l *stubLink) Reset() error      { return l.record("reset") }
func (l *stubLink) Reconnect() error  { return l.record("reconnect") }
func (l *stubLink) PauseReading(d time.Duration) {
	_ = l.record("pause(" + d.String() + ")")
}

func TestPlayPerformsEveryOp(t *testing.T) {
	link := &stubLink{}
	plan := []faults.Step{
		{Op: faults.OpPauseReading, For: time.Second},
		{Op: faults.OpWrite, Data: []byte("hello")},
		{Op: faults.OpWrite},
		{Op: faults.OpSleep, For: time.Millisecond},
		{Op: faults.OpCloseWrite}, {Op: faults.OpClose}, {Op: faults.OpReconnect}, {Op: faults.OpReset},
	}
	if err := faults.Play(context.Background(), link, plan); err != nil {
		t.Fatal(err)
	}
	want := "pause(1s) write(5) close-write close reconnect reset"
	if got := strings.Join(link.calls, " "); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
}

func TestPlayRetriesShortWrites(t *testing.T) {
	link := &stubLink{maxWrite: 3}
	data := frames(2)
	if err := faults.Play(context.Background(), link, faults.Writes(data...)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(link.written.Bytes(), append(data[0], data[1]...)) {
		t.Errorf("written %q", link.written.Bytes())
	}
	if len(link.calls) != 11+12 { // 33 bytes in 11 writes, 34 in 12
		t.Errorf("%d writes: %v", len(link.calls), link.calls)
	}
}

// zeroWriter makes no progress and reports no error.
type zeroWriter struct{ stubLink }

func (*zeroWriter) Write([]byte) (int, error) { return 0, nil }

func TestPlayErrorsNameTheStep(t *testing.T) {
	plan := []faults.Step{{Op: faults.OpWrite, Data: []byte("x")}, {Op: faults.OpSleep}, {Op: faults.OpClose}, {Op: faults.OpReconnect}}
	for _, tc := range []struct {
		link  faults.Link
		plan  []faults.Step
		index int
		op    faults.Op
		is    error
	}{
		{&stubLink{fail: "close"}, plan, 2, faults.OpClose, errBoom},
		{&stubLink{fail: "write(1)"}, plan, 0, faults.OpWrite, errBoom},
		{&zeroWriter{}, plan, 0, faults.OpWrite, io.ErrNoProgress},
		{&stubLink{}, []faults.Step{{Op: faults.OpClose}, {Op: 99}}, 1, 99, nil},
	} {
		err := faults.Play(context.Background(), tc.link, tc.plan)
		var se *faults.StepError
		if !errors.As(err, &se) || se.Index != tc.index || se.Op != tc.op {
			t.Errorf("got %v, want an error of step %d (%v)", err, tc.index, tc.op)
			continue
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%v does not wrap %v", err, tc.is)
		}
		if want := fmt.Sprintf("step %d (%v)", tc.index, tc.op); !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

func TestPlaySleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	link := &stubLink{}
	plan := []faults.Step{{Op: faults.OpWrite, Data: []byte("x")}, {Op: faults.OpSleep, For: time.Hour}, {Op: faults.OpClose}}
	start := time.Now()
	err := faults.Play(ctx, link, plan)
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("Play slept %v", elapsed)
	}
	var se *faults.StepError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &se) || se.Index != 1 {
		t.Fatalf("got %v, want step 1 wrapping the deadline", err)
	}
	if got := strings.Join(link.calls, " "); got != "write(1)" {
		t.Errorf("calls %s", got)
	}
	// A context done before the start: nothing is done.
	link = &stubLink{}
	if err := faults.Play(ctx, link, plan); !errors.Is(err, context.DeadlineExceeded) || len(link.calls) != 0 {
		t.Errorf("got %v after calls %v", err, link.calls)
	}
}

// blockingWriter blocks every write until a write deadline in the past is set,
// like a socket whose peer stopped reading.
type blockingWriter struct {
	stubLink
	mu        sync.Mutex
	deadlines []time.Time
	expired   chan struct{}
}

func (l *blockingWriter) SetWriteDeadline(t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadlines = append(l.deadlines, t)
	if !t.IsZero() && t.Before(time.Now()) {
		close(l.expired)
	}
	return nil
}

func (l *blockingWriter) Write([]byte) (int, error) {
	<-l.expired
	return 0, os.ErrDeadlineExceeded
}

func TestPlayInterruptsBlockedWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	link := &blockingWriter{expired: make(chan struct{})}
	err := faults.Play(ctx, link, faults.Writes([]byte("x")))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline and the write's", err)
	}
	link.mu.Lock()
	defer link.mu.Unlock()
	if n := len(link.deadlines); n != 2 || !link.deadlines[1].IsZero() {
		t.Errorf("deadlines %v: want one in the past, then cleared", link.deadlines)
	}
}
