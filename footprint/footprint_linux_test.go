//go:build linux

package footprint_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/footprint"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

// build compiles the module's package pkg into dir.
func build(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the targets:", err)
	}
	out := filepath.Join(dir, name)
	if b, err := exec.Command(goBin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// A reference reactor lends its read and write buffers, so an idle
// connection costs it its source struct (a few hundred bytes; measured
// ~370 for lt); examples/echo's goroutine per connection keeps a stack and
// a 64 KiB buffer (measured ~8 KiB resident). The bound between them, 4
// KiB, tells the two apart with a wide margin on either side.
func TestIdleFootprint(t *testing.T) {
	dir := t.TempDir()
	reactorlab := build(t, dir, "reactorlab", "../cmd/reactorlab")
	echo := build(t, dir, "echo", "../examples/echo")
	const conns, bound = 2000, 4096
	for _, tc := range []struct {
		target conformance.Target
		lean   bool
	}{
		{conformance.Process{Design: reactors.LT, Command: []string{reactorlab}}, true},
		{conformance.Process{Design: reactors.Prio, Command: []string{reactorlab}}, true},
		{conformance.Command{Argv: []string{echo}}, false},
	} {
		t.Run(tc.target.Name(), func(t *testing.T) {
			res, err := footprint.Measure(context.Background(), tc.target, footprint.Options{Conns: conns})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", res)
			if res.ServerFds < conns {
				t.Errorf("the server held %d descriptors with %d connections open", res.ServerFds, conns)
			}
			if tc.lean && res.PerConn > bound {
				t.Errorf("%.0f bytes of RSS per idle connection, bound %d", res.PerConn, bound)
			}
			if !tc.lean && res.PerConn <= bound {
				t.Errorf("%.0f bytes of RSS per idle connection for a server with a goroutine and a 64 KiB buffer per connection: the measurement missed them (bound %d)", res.PerConn, bound)
			}
		})
	}
}

// Bad options and targets without a process of their own are refused,
// naming what is wrong; a target that cannot start, with the
// *target.StartError that says why, within the start timeout.
func TestMeasureRefuses(t *testing.T) {
	for _, tc := range []struct {
		target conformance.Target
		opts   footprint.Options
		want   string
		cause  target.StartCause // "": no StartError
	}{
		{conformance.InProcess{Design: reactors.LT}, footprint.Options{Conns: 10}, "run a child-process target", ""},
		{conformance.InProcess{Design: reactors.LT}, footprint.Options{Conns: -1}, "conns -1 out of range", ""},
		{conformance.Command{Argv: []string{filepath.Join(os.TempDir(), "no-such-server")}}, footprint.Options{Conns: 10}, "could not be run", target.StartMissing},
		{conformance.Command{Argv: []string{"sleep", fmt.Sprintf("1000.%d", os.Getpid())}}, footprint.Options{Conns: 10, StartTimeout: 500 * time.Millisecond},
			"within 500ms", target.StartNoListener},
	} {
		t0 := time.Now()
		_, err := footprint.Measure(context.Background(), tc.target, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: %v, want an error containing %q", tc.target.Name(), tc.opts, err, tc.want)
		}
		var se *target.StartError
		if got := errors.As(err, &se); got != (tc.cause != "") || got && se.Cause != tc.cause {
			t.Errorf("%s %+v: %v, want a StartError with cause %q", tc.target.Name(), tc.opts, err, tc.cause)
		}
		if el := time.Since(t0); el > 2*time.Second {
			t.Errorf("%s: refused after %v", tc.target.Name(), el)
		}
	}
}

// pipeEcho builds testdata/pipeecho, a byte echo that holds three
// descriptors per connection (the socket and a pipe pair).
func pipeEcho(t *testing.T) string {
	return build(t, t.TempDir(), "pipeecho", "./testdata/pipeecho")
}

// TestFullDescriptorTableIsNamed: a server that holds three descriptors
// per connection fills the table footprint sets (200 + 256) after about
// 150 connections and leaves the next unanswered. The measurement fails
// soon after, not at its timeout, naming the server's descriptor count and
// limit as the likely cause and how many descriptors each connection took.
func TestFullDescriptorTableIsNamed(t *testing.T) {
	server := pipeEcho(t)
	const conns, timeout = 200, 60 * time.Second
	t0 := time.Now()
	_, err := footprint.Measure(context.Background(), conformance.Command{Argv: []string{server}}, footprint.Options{Conns: conns, Timeout: timeout})
	elapsed := time.Since(t0)
	t.Logf("after %v: %v", elapsed, err)
	if err == nil {
		t.Fatal("measured a server whose descriptor table cannot hold the connections")
	}
	msg := err.Error()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`^connection 1[45]\d of 200 to 127\.0\.0\.1:\d+: no echo after `),
		regexp.MustCompile(`the server's descriptor table is full: pid \d+ holds 45\d descriptors, its limit \(RLIMIT_NOFILE\) 456: likely the cause`),
		regexp.MustCompile(`--conns \+ 256 = 456`),
		regexp.MustCompile(`, 3\.0 a connection`),
	} {
		if !want.MatchString(msg) {
			t.Errorf("the error does not match %s:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "footprint: footprint:") {
		t.Errorf("a doubled prefix: %s", msg)
	}
	if elapsed > 15*time.Second {
		t.Errorf("failed after %v: it waited for the timeout (%v) rather than stopping at the full table", elapsed, timeout)
	}
}

// TestNoEchoAloneNamesNoCause: a server that never answers, its table far
// from full, fails at the timeout with its descriptor count and limit said,
// and no cause named: no echo alone is not evidence of a full table.
func TestNoEchoAloneNamesNoCause(t *testing.T) {
	server := pipeEcho(t)
	_, err := footprint.Measure(context.Background(), conformance.Command{Argv: []string{server, "-mute"}}, footprint.Options{Conns: 3, Timeout: 4 * time.Second})
	if err == nil {
		t.Fatal("measured a server that never answers")
	}
	msg := err.Error()
	want := regexp.MustCompile(`^connection 1 of 3 to 127\.0\.0\.1:\d+: no echo within \S+ \(0 of \d+ bytes\) \(the server's descriptor table: pid \d+ holds \d+ descriptors, its limit \(RLIMIT_NOFILE\) 259\)$`)
	if !want.MatchString(msg) || strings.Contains(msg, "likely") {
		t.Errorf("the error does not match %s, or names a cause:\n%s", want, msg)
	}
}
