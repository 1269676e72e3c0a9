//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/lab"
)

// TestRunHelpPlacement: run's help lists no flag the harness sets
// (--loop-cpus, --listen, --control-listen: serve keeps them), states
// each placement default with what it resolved to here, and the flags,
// given, are refused in words that say why.
func TestRunHelpPlacement(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run --help: exit %d", code)
	}
	help := stdout.String()
	for _, name := range []string{"loop-cpus", "listen", "control-listen"} {
		if strings.Contains(help, "\n  --"+name+" ") {
			t.Errorf("run --help lists --%s, which run refuses:\n%s", name, help)
		}
	}
	flat := strings.Join(strings.Fields(help), " ") // the help's words, unwrapped
	for _, want := range []string{"(default: " + lab.DefaultPlacementText + "; here " + defaultPlacement().String() + ")",
		"(0: " + harness.DefaultLoadLoopsRule + "; here, with the default placement, " + defaultLoopsText() + ")"} {
		if !strings.Contains(flat, want) {
			t.Errorf("run --help does not say %q:\n%s", want, help)
		}
	}
	stdout.Reset()
	if code := run([]string{"serve", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "\n  --loop-cpus ") {
		t.Errorf("serve --help (exit %d) lacks --loop-cpus:\n%s", code, stdout.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--loop-cpus", "0"}, "reactorlab run: --loop-cpus: the harness pins the reactor's loops to the server's set, one CPU each (give the set with --cpus server=LIST)"},
		{[]string{"--control-listen=127.0.0.1:1"}, "reactorlab run: --control-listen: the harness chooses the server's addresses"},
		{[]string{"-listen", "127.0.0.1:1"}, "reactorlab run: --listen: the harness chooses the server's addresses"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"run", "--reactor", "lt"}, tc.args...), &stdout, &stderr)
		if code != exitUsage || !strings.HasPrefix(stderr.String(), tc.want+"\n") || stdout.Len() != 0 {
			t.Errorf("run %q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}

// TestRunSaysWhereLoopsRan: `reactorlab run --loadgen-loops 2 --json -`
// with one CPU a side (so both loops share the load generator's CPU: this
// machine may have only two) writes a result whose placed record has
// both of the load generator's loops, each verified on its CPU, and
// prio-thread's data and control loops, verified; the summary says so,
// and its first line names the reactor without the flag the harness
// added.
func TestRunSaysWhereLoopsRan(t *testing.T) {
	allowed, err := lab.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("this process may use %d CPU(s); the test needs 2", len(allowed))
	}
	srv, gen := allowed[0], allowed[1]
	t.Logf("prio-thread's 2 loops on CPU %d, the load generator's 2 on CPU %d: several loops per CPU", srv, gen)
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "cell")
	code := run([]string{"run", "--reactor", "prio-thread", "--hot", "2", "--inflight", "4", "--duration", "600ms", "--warmup", "200ms",
		"--cpus", "server=" + strconv.Itoa(srv) + ",loadgen=" + strconv.Itoa(gen), "--loadgen-loops", "2", "--json", "-", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var res harness.CellResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("--json -: %v", err)
	}
	p := res.Placed
	if p == nil || p.Loadgen == nil || p.Server == nil {
		t.Fatalf("placed: %+v", p)
	}
	if len(p.Loadgen.Loops) != 2 || !p.Loadgen.Verified {
		t.Errorf("the load generator: %+v; want 2 loops, verified", p.Loadgen)
	}
	for _, l := range p.Loadgen.Loops {
		if !l.Verified || l.CPU != gen {
			t.Errorf("load generator loop %d: %+v; want verified on CPU %d", l.Loop, l, gen)
		}
	}
	if len(p.Server.Loops) != 2 || p.Server.Loops[0].Role != "data" || p.Server.Loops[1].Role != "control" || !p.Server.Loops[1].Verified {
		t.Errorf("prio-thread: %+v; want a data and a control loop, verified", p.Server.Loops)
	}
	summary := stderr.String() // --json -: the summary goes to stderr
	label := "reactorlab run: prio-thread (reference reactor)\n"
	if !strings.Contains(summary, label) || strings.Contains(summary, "--loop-cpus") {
		t.Errorf("the summary's first line is not %q alone:\n%s", label, summary)
	}
	if want := "loadgen on CPU " + strconv.Itoa(gen) + ", 2 loops (both on CPU " + strconv.Itoa(gen) + ": more loops than CPUs) (every thread verified)"; !strings.Contains(summary, want) {
		t.Errorf("the summary does not say %q:\n%s", want, summary)
	}
}

// TestMatrixScalingRefusedOnFewCPUs: on a thread that may use at most two
// CPUs, `reactorlab matrix scaling` refuses before anything runs (exit 2,
// no directory made), naming the spec, the cell, what it needs and what
// this process may use. The narrowed thread exits locked, so no thread
// the process keeps is changed.
func TestMatrixScalingRefusedOnFewCPUs(t *testing.T) {
	allowed, err := lab.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	narrow := allowed[:min(2, len(allowed))]
	dir := filepath.Join(t.TempDir(), "scaling")
	type outcome struct {
		code           int
		stdout, stderr string
		err            error
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var set unix.CPUSet
		for _, c := range narrow {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- outcome{err: err}
			return
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"matrix", "scaling", "--out", dir}, &stdout, &stderr)
		done <- outcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
	}()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	var list []string
	for _, c := range narrow {
		list = append(list, strconv.Itoa(c))
	}
	want := []string{"reactorlab matrix: embedded:scaling: spec scaling-lt: cell baseline: cpus server=count:4,loadgen=count:4: ",
		"the placement needs 8 CPUs (server 4, loadgen 4), this process may use " + strconv.Itoa(len(narrow))}
	for _, w := range want {
		if o.code != exitUsage || !strings.Contains(o.stderr, w) {
			t.Errorf("matrix scaling on CPUs %s: exit %d, stderr %q; want %d and %q", strings.Join(list, ","), o.code, o.stderr, exitUsage, w)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused matrix made its directory: %v", err)
	}
}
