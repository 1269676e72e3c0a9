//go:build linux

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

// A server that cannot be started is one of three causes, each with the
// server's stderr tail, in the result and in Run's error, within Ready
// (plus the lab's start and stop), in the lab and on loopback.
func TestStartFailureCauses(t *testing.T) {
	const ready = 500 * time.Millisecond
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
				if tc.cause == target.StartNoListener && (sf.Timeout != ready || !strings.Contains(msg, "within 500ms")) {
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

func TestCheckCommand(t *testing.T) {
	for _, ok := range []string{"true", "/bin/sh -c 'exit 0'", "cd / && /nonexistent", "exec /nonexistent", "X=1 /nonexistent"} {
		if err := CheckCommand(ok); err != nil {
			t.Errorf("CheckCommand(%q) = %v, want it left to the shell or accepted", ok, err)
		}
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/nonexistent/server --listen {addr}", "no-such-program-here {addr}", notExec, dir} {
		err := CheckCommand(bad)
		var sf *target.StartError
		if !errors.As(err, &sf) || sf.Cause != target.StartMissing || !strings.Contains(err.Error(), strings.Fields(bad)[0]) {
			t.Errorf("CheckCommand(%q) = %v, want a missing program named", bad, err)
		}
	}
}

func TestCheckCellDir(t *testing.T) {
	dir := t.TempDir()
	if err := CheckCellDir(filepath.Join(dir, "new")); err != nil {
		t.Errorf("a new directory: %v", err)
	}
	if err := CheckCellDir(dir); err != nil {
		t.Errorf("an empty directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	if err := CheckCellDir(dir); err != nil {
		t.Errorf("a directory without a run's file: %v", err)
	}
	// A file where the directory, or one of its parents, would be.
	file := filepath.Join(dir, "notes.txt")
	for path, want := range map[string]string{
		file:                            file + ": not a directory",
		filepath.Join(file, "a", "run"): filepath.Join(file, "a", "run") + ": " + file + " is not a directory",
	} {
		if err := CheckCellDir(path); !errors.Is(err, syscall.ENOTDIR) || err.Error() != want {
			t.Errorf("CheckCellDir(%s) = %v, want %q", path, err, want)
		}
	}
	for _, name := range CellFiles {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, name), nil, 0o644)
		if err := CheckCellDir(d); !errors.Is(err, ErrCellDirInUse) || !strings.Contains(err.Error(), name) {
			t.Errorf("a directory holding %s: %v", name, err)
		}
	}
}

// CheckServe and CheckLoad word the refusals as serve's and loadgen's
// flags, wrapping the packages' errors.
func TestCheckMessages(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Budgets.Input = 0
	if err := CheckServe(reactors.LT, cfg); err == nil || err.Error() != "--budget-input = 0 (accepted: 1..1048576)" || !errors.Is(err, reactors.ErrConfig) {
		t.Errorf("CheckServe: %v", err)
	}
	cfg = reactors.DefaultConfig()
	cfg.Workers = 2
	if err := CheckServe(reactors.OneShot, cfg); err == nil || !strings.HasPrefix(err.Error(), "--workers = 2: oneshot") {
		t.Errorf("CheckServe oneshot workers: %v", err)
	}
	cfg.Callback = "50"
	if err := CheckServe(reactors.LT, cfg); err == nil || !strings.HasPrefix(err.Error(), "--callback: cost: parse") {
		t.Errorf("CheckServe callback: %v", err)
	}
	if err := CheckServe(reactors.LT, reactors.DefaultConfig()); err != nil {
		t.Errorf("CheckServe default: %v", err)
	}
	err := CheckLoad(loadgen.Config{Hot: 1, Duration: time.Second, Steady: 1})
	if err == nil || !errors.Is(err, loadgen.ErrConfig) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "--inflight = 0") || !strings.Contains(err.Error(), "--rate = 0") {
		t.Errorf("CheckLoad: %v", err)
	}
	if err := CheckLoad(loadgen.Config{Hot: 1, InFlight: 1, Duration: time.Second, DataAddr: "{addr}"}); err != nil {
		t.Errorf("CheckLoad with placeholders: %v", err)
	}
}
