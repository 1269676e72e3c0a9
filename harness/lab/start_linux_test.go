//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/target"
)

// A server that cannot be started is one of three causes, each with the
// server's stderr tail, in the result and in Run's error, within Ready
// (plus the lab's start and stop), in the lab and on loopback. A server
// that never listens takes the whole of Ready to fail: 500 ms, 200 ms with
// -short (the same wait, shorter).
func TestStartFailureCauses(t *testing.T) {
	const fullReady = 500 * time.Millisecond
	for _, tc := range []struct {
		name   string
		argv   []string
		cause  target.StartCause
		code   int
		stderr string
		words  string // in the error, after the server's argv and ": "
	}{
		{"missing program", []string{"/bin/sh", "-c", "exec /nonexistent/server"}, target.StartMissing, 127, "not found",
			"the program could not be run (exit status 127: not found, or not executable); its stderr ends:\n    "},
		{"exits at once", []string{"/bin/sh", "-c", "echo going >&2; exit 3"}, target.StartExited, 3, "going",
			"exited (exit status 3) before it listened on "},
		{"never listens", []string{"@test-echo", "--no-listen"}, target.StartNoListener, -1, "",
			"nothing accepted connections on "},
	} {
		for _, mode := range []Mode{ModeLoopback, ModeAuto} {
			t.Run(tc.name+" "+string(mode), func(t *testing.T) {
				ready := fullReady
				if testing.Short() && tc.cause == target.StartNoListener {
					ready = 200 * time.Millisecond
				}
				spec := echoSpec(mode, Unpinned)
				spec.Server.Argv = tc.argv
				spec.Ready = ready
				t0 := time.Now()
				res, err := Run(context.Background(), spec)
				el := time.Since(t0)
				var sf *target.StartError
				if !errors.As(err, &sf) {
					t.Fatalf("err %v: no *target.StartError", err)
				}
				if res == nil || res.StartFailure == nil || !reflect.DeepEqual(*res.StartFailure, *sf) {
					t.Fatalf("result's start failure %+v, error's %+v", res, sf)
				}
				if sf.Cause != tc.cause || sf.Code != tc.code || !strings.Contains(sf.StderrTail, tc.stderr) {
					t.Errorf("start failure %+v: want cause %q, code %d, stderr with %q", sf, tc.cause, tc.code, tc.stderr)
				}
				// proc.StartReport's words: the server, the cause, then its
				// stderr; no detail of the starter's.
				msg := sf.Error()
				if sf.Detail != "" || len(sf.Addrs) == 0 || !strings.HasPrefix(msg, strings.Join(tc.argv, " ")+": "+tc.words) {
					t.Errorf("detail %q, addrs %v, error %q: want it to begin %q", sf.Detail, sf.Addrs, msg, strings.Join(tc.argv, " ")+": "+tc.words)
				}
				if tc.stderr == "" && !strings.HasSuffix(msg, "; it wrote nothing on stderr") || tc.stderr != "" && !strings.Contains(msg, "; its stderr ends:\n    ") {
					t.Errorf("error %q does not end with the server's stderr", msg)
				}
				if tc.cause == target.StartNoListener && (sf.Timeout != ready || !strings.Contains(msg, "within "+ready.String())) {
					t.Errorf("timeout %v, error %q: want %v", sf.Timeout, msg, ready)
				}
				raw, err := json.Marshal(sf)
				var back target.StartError
				if err != nil || json.Unmarshal(raw, &back) != nil || !reflect.DeepEqual(back, *sf) || !strings.Contains(string(raw), `"timeout_s"`) != (sf.Timeout == 0) {
					t.Errorf("JSON %s (%v) reads back as %+v, want %+v", raw, err, back, *sf)
				}
				if res.Valid || res.Client != nil || len(res.Audit.Diffs) != 0 {
					t.Errorf("result %s", dump(res))
				}
				if el > ready+time.Second {
					t.Errorf("took %v with Ready %v", el, ready)
				}
			})
		}
	}
}
