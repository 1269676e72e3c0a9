//go:build linux

package footprint_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
		{conformance.Command{Argv: []string{filepath.Join(os.TempDir(), "no-such-server")}}, footprint.Options{Conns: 10}, "starting", target.StartMissing},
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
