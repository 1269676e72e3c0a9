//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/loadgen"
)

func TestRunRefusesBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // every one must appear in the message
	}{
		{[]string{}, []string{"--reactor", "--target"}},
		{[]string{"--reactor", "nginx"}, []string{"nginx", "lt, et, oneshot, prio, prio-thread"}},
		{[]string{"--reactor", "lt", "--target", "cmd:true"}, []string{"one of"}},
		{[]string{"--target", "true"}, []string{"cmd:"}},
		{[]string{"--reactor", "lt", "--fault", "gremlins"}, []string{"gremlins", "half-packets", "no-drain"}},
		{[]string{"--target", "cmd:true", "--fault", "no-drain"}, []string{"no-drain", "--reactor only"}},
		{[]string{"--target", "cmd:true", "--budget-input", "4"}, []string{"--budget-input", "reference reactors only"}},
		{[]string{"--reactor", "lt", "--listen", "127.0.0.1:1"}, []string{"--listen", "harness"}},
		{[]string{"--reactor", "lt", "--steady", "1"}, []string{"rate"}},
		{[]string{"--reactor", "lt", "--hot", "0", "--control-every", "0"}, []string{"source"}},
		{[]string{"--reactor", "lt", "--hot", "1", "--inflight", "0"}, []string{"inflight"}},
		{[]string{"--reactor", "lt", "--control-timeout", "-1ms"}, []string{"control-timeout = -1ms", "(0, 1h]"}},
		{[]string{"--reactor", "lt", "--removal-after", "-2"}, []string{"removal-after = -2", "consecutive false timeouts"}},
		{[]string{"--reactor", "lt", "--urgent-every", "1us"}, []string{"urgent-every = 1µs", "0 (no urgent bytes) or in [10µs, 1h0m0s]"}},
		{[]string{"--reactor", "lt", "--hot", "0", "--urgent-every", "10ms"}, []string{"urgent-every = 10ms without data connections"}},
		{[]string{"--reactor", "lt", "--lab", "maybe"}, []string{"maybe", "auto, on, off"}},
		{[]string{"--reactor", "lt", "--cpus", "server=x"}, []string{"server", "CPU"}},
		{[]string{"--reactor", "lt", "--cpus", "server=0,loadgen=0"}, []string{"CPU 0"}},
		{[]string{"--reactor", "lt", "--cpus", "server=1023,loadgen=0"}, []string{"1023"}},
		{[]string{"--reactor", "lt", "--grace", "-1s"}, []string{"grace"}},
		{[]string{"--reactor", "lt", "--server-cpu", "-0.5"}, []string{"--server-cpu", "-0.5"}},
		{[]string{"--reactor", "lt", "--server-cpu", "NaN"}, []string{"--server-cpu", "NaN"}},
		{[]string{"--reactor", "lt", "--server-cpu", "0.01"}, []string{"--server-cpu", "0.05..1024"}},
		{[]string{"--reactor", "lt", "--budget-input", "0"}, []string{"budget-input"}},
		{[]string{"--reactor", "lt", "--duration", "0s"}, []string{"duration"}},
		{[]string{"--reactor", "lt", "stray"}, []string{"stray"}},
	} {
		var stdout, stderr bytes.Buffer
		// A case refused too late would run and write files: keep them in
		// the test's directory, and check that none were written.
		out := filepath.Join(t.TempDir(), "cell")
		code := run(append([]string{"run", "--out", out}, tc.args...), &stdout, &stderr)
		if _, err := os.Stat(out); err == nil {
			t.Errorf("run %q: refused, yet it created %s", tc.args, out)
		}
		if code != exitUsage {
			t.Errorf("run %q: exit %d, want %d (stderr %q)", tc.args, code, exitUsage, stderr.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("run %q: stderr %q does not name %q", tc.args, stderr.String(), w)
			}
		}
	}
}

// refusal runs `reactorlab args...` and checks a refusal: exit 2, nothing
// on stdout, one message (its first line begins "reactorlab CMD: "), within
// bound. It returns the message.
func refusal(t *testing.T, bound time.Duration, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	t0 := time.Now()
	code := run(args, &stdout, &stderr)
	el := time.Since(t0)
	msg := stderr.String()
	if code != exitUsage || stdout.Len() != 0 || strings.Count(msg, "reactorlab "+args[0]+": ") != 1 ||
		!strings.HasPrefix(msg, "reactorlab "+args[0]+": ") {
		t.Errorf("%q: exit %d (want %d), stdout %q, stderr:\n%s", args, code, exitUsage, stdout.String(), msg)
	}
	if el > bound {
		t.Errorf("%q: refused after %v, want within %v", args, el, bound)
	}
	return msg
}

// TestRunRefusesWhatTheChildWould: a value the serve child or the load
// generator would refuse is refused by run before anything starts (at
// once, nothing written), in the child's words.
func TestRunRefusesWhatTheChildWould(t *testing.T) {
	for _, bad := range [][]string{
		{"--callback", "50"},
		{"--budget-input", "0"},
		{"--timer", "sometimes"},
		{"--reactor", "oneshot", "--workers", "2"},
		{"--out-low", "2000000"},
	} {
		serveArgs := append([]string{"serve"}, bad...)
		runArgs := append([]string{"run", "--reactor", "lt", "--out", filepath.Join(t.TempDir(), "cell")}, bad...)
		child := refusal(t, time.Second, serveArgs...)
		mine := refusal(t, time.Second, runArgs...)
		// The same message, but for the command's name.
		if want := strings.ReplaceAll(child, "reactorlab serve", "reactorlab run"); mine != want {
			t.Errorf("%q:\nrun says   %q\nserve says %q", bad, mine, child)
		}
		if _, err := os.Stat(runArgs[4]); err == nil {
			t.Errorf("%q: refused, yet it created %s", bad, runArgs[4])
		}
	}
	// The load generator's refusal, as loadgen words it for its file.
	dir := t.TempDir()
	cfg := loadgen.Config{DataAddr: "127.0.0.1:1", Hot: 1, InFlight: 0, Duration: time.Second, Warmup: time.Second}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "load.json")
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	child := refusal(t, time.Second, "loadgen", "--config", cfgPath, "--out", dir)
	mine := refusal(t, time.Second, "run", "--reactor", "lt", "--inflight", "0", "--out", filepath.Join(dir, "cell"))
	childMsg := strings.TrimPrefix(strings.SplitN(child, "\n", 2)[0], "reactorlab loadgen: "+cfgPath+": ")
	mineMsg := strings.TrimPrefix(strings.SplitN(mine, "\n", 2)[0], "reactorlab run: ")
	if childMsg != mineMsg || !strings.Contains(mineMsg, "--inflight = 0") {
		t.Errorf("--inflight 0:\nrun says     %q\nloadgen says %q", mineMsg, childMsg)
	}
}

// TestRunDurationsSayTheirUnit: every duration flag of run refuses a bare
// number saying it wants a unit.
func TestRunDurationsSayTheirUnit(t *testing.T) {
	for _, name := range []string{"--duration", "--warmup", "--control-every", "--control-timeout", "--stop-at", "--urgent-every", "--drain", "--interval", "--grace", "--start-timeout", "--tick", "--app-timer"} {
		msg := refusal(t, time.Second, "run", "--reactor", "lt", name, "3", "--out", filepath.Join(t.TempDir(), "cell"))
		if !strings.Contains(msg, name+` "3": not a duration (want a number with a unit`) {
			t.Errorf("%s 3: %q does not say it wants a unit", name, msg)
		}
	}
}

// TestRunRefusesADirectoryWithARun: --out holding any of a run's files is
// refused, naming the file; an empty directory, or one with other files,
// is not (the refusal that follows is the target's).
func TestRunRefusesADirectoryWithARun(t *testing.T) {
	for _, name := range []string{harness.CellSummaryFile, loadgen.HlogFile, harness.CellLoadConfigFile} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("an earlier run's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		msg := refusal(t, time.Second, "run", "--reactor", "lt", "--out", dir)
		if !strings.Contains(msg, "--out "+dir) || !strings.Contains(msg, filepath.Join(dir, name)+" is there") {
			t.Errorf("--out holding %s: %q", name, msg)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != "an earlier run's\n" {
			t.Errorf("%s was touched: %q", name, b)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	msg := refusal(t, 2*time.Second, "run", "--target", "cmd:true", "--lab", "off", "--out", dir)
	if !strings.Contains(msg, "cmd:true: exited (exit status 0) before it listened on ") {
		t.Errorf("a directory without a run: %q, want it accepted and the target refused", msg)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a refused target left files in %s: %v", dir, entries)
	}
}

// TestRunRefusesATargetThatDoesNotStart: a missing program (a simple
// command, checked before anything starts, or behind a shell), one that
// exits at once, and one that never listens are each one refusal, exit 2,
// within --start-timeout plus the lab's own set-up and stop (refusalSlack),
// never the default start timeout nor the run's duration, naming the
// target (as the user wrote it), the cause and the server's stderr, with a
// hint to wait longer where that may help (not for a server that listens
// on a port of its own: it is told where it listens); nothing is left in
// --out. On loopback the refusal is word for
// word footprint's (and so conform's: the same target.StartError),
// but for what was not done and the port.
func TestRunRefusesATargetThatDoesNotStart(t *testing.T) {
	t.Parallel() // its target is a process of its own, and it changes no state of this one
	const startTimeout = 500 * time.Millisecond
	lab := "auto" // one case in the lab, where it works: it costs ~50 ms
	// Unique to this process: another go test of this package may be
	// running the same test.
	sleep := fmt.Sprintf("sleep 1000.%d2", os.Getpid()) // 2: not conform_test.go's sleep, which may run beside it
	const head = "reactorlab run: the target could not be started, so nothing was measured: cmd:"
	elsewhere, ownPort := ownPortServer(t)
	for _, tc := range []struct {
		target, lab string
		want        []string
		likeOthers  bool // worded as footprint words it
	}{
		{"/nonexistent/server --listen {addr}", "off", []string{": the program could not be run (not found, or not executable); ", "/nonexistent/server"}, false},
		{"cd / && /nonexistent/server", "off", []string{": the program could not be run (exit status 127: not found, or not executable); its stderr ends:\n    ", "not found"}, true},
		{"echo going away >&2; exit 3", "off", []string{": exited (exit status 3) before it listened on 127.0.0.1:", "; its stderr ends:\n    going away\n"}, true},
		{"true", lab, []string{": exited (exit status 0) before it listened on ", "; it wrote nothing on stderr\n"}, false},
		{sleep, "off", []string{": nothing accepted connections on 127.0.0.1:", " within 500ms (the program was running; it has been killed); it wrote nothing on stderr\n",
			"may need a longer --start-timeout.\n"}, true},
		{sleep, lab, []string{": nothing accepted connections on ", " within 500ms (", "--start-timeout.\n"}, false},
		// A server on a port of its own: said so, with its stdout, and no
		// hint to wait longer. (footprint offers it a control address
		// too, which its stderr then names: not worded alike.)
		{elsewhere, "off", []string{": it listens on 127.0.0.1:" + ownPort + ", not on the address it was given (127.0.0.1:",
			"its stdout ends:\n    listening on " + ownPort + "\n"}, false},
		{elsewhere, lab, []string{": it listens on 127.0.0.1:" + ownPort + ", not on the address it was given (", "its stdout ends:\n    listening on " + ownPort + "\n"}, false},
	} {
		out := filepath.Join(t.TempDir(), "cell")
		msg := refusal(t, startTimeout+refusalSlack, "run", "--target", "cmd:"+tc.target, "--lab", tc.lab,
			"--start-timeout", startTimeout.String(), "--duration", "30s", "--out", out)
		if !strings.HasPrefix(msg, head+tc.target+": ") {
			t.Errorf("%q (lab %s): %q does not begin %q", tc.target, tc.lab, msg, head+tc.target+": ")
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q (lab %s): %q does not say %q", tc.target, tc.lab, msg, w)
			}
		}
		if strings.Contains(tc.target, "listening on") && strings.Contains(msg, "--start-timeout") {
			t.Errorf("%q (lab %s): a server listening elsewhere is told to wait longer: %q", tc.target, tc.lab, msg)
		}
		if first, _, _ := strings.Cut(msg, "\n"); strings.Contains(msg, "--help") || strings.Contains(first, "/bin/sh") {
			t.Errorf("%q: a target's refusal points to --help, or names the shell (not the target): %q", tc.target, msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q: refused, yet %s is there", tc.target, out)
		}
		if tc.likeOthers {
			theirs := refusal(t, startTimeout+refusalSlack, "footprint", "--target", "cmd:"+tc.target, "--conns", "10",
				"--start-timeout", startTimeout.String())
			norm := func(m, prefix string) string {
				return port.ReplaceAllString(strings.TrimPrefix(m, prefix), ":PORT")
			}
			if mine, other := norm(msg, "reactorlab run: the target could not be started, so nothing was measured: "),
				norm(theirs, "reactorlab footprint: the target could not be started, so nothing was measured: "); mine != other {
				t.Errorf("%q: run and footprint word the refusal differently:\nrun:       %q\nfootprint: %q", tc.target, mine, other)
			}
		}
	}
	if pids := processesMatching(strings.Replace(sleep, " ", "\x00", 1) + "\x00"); len(pids) > 0 {
		t.Errorf("the target's process is still there: %v", pids)
	}
}

// refusalSlack is what a refusal may take beyond --start-timeout: the
// lab's set-up, the target's stop and the audit, on a loaded 2-core
// machine (1.7 s seen with other packages' tests beside it). It stays far
// below what a refusal bounded by anything else would take: the default
// start timeout (10 s) or the run's --duration (30 s).
const refusalSlack = 3 * time.Second

// port matches the port of a loopback address.
var port = regexp.MustCompile(`(127\.0\.0\.1):[0-9]+`)

// TestRunRefusesAnOutThatIsNoDirectory: --out naming a file, or a path
// under one, is refused before anything starts (exit 2, one message, the
// file untouched).
func TestRunRefusesAnOutThatIsNoDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for out, want := range map[string]string{
		file:                        "reactorlab run: --out " + file + ": not a directory\n",
		filepath.Join(file, "cell"): "reactorlab run: --out " + filepath.Join(file, "cell") + ": " + file + " is not a directory\n",
	} {
		msg := refusal(t, time.Second, "run", "--reactor", "lt", "--out", out)
		if !strings.HasPrefix(msg, want) {
			t.Errorf("--out %s: %q, want it to begin %q", out, msg, want)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "mine\n" {
		t.Errorf("the file was touched: %q", b)
	}
}

// TestRunHelpOnStdout: run, serve and loadgen print their help on stdout:
// the synopsis first, a paragraph with the exit codes, the flags (run's
// under headings: TestRunHelpIsGrouped).
func TestRunHelpOnStdout(t *testing.T) {
	for _, name := range []string{"run", "serve", "loadgen"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{name, "--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, stderr.String())
		}
		help := stdout.String()
		flags := "\nflags:\n  --"
		if name == "run" {
			flags = "\nwhat to measure:\n  --"
		}
		if !strings.HasPrefix(help, "usage: reactorlab "+name+" ") || !strings.Contains(help, "Exit 0") || !strings.Contains(help, flags) {
			t.Errorf("%s --help:\n%s", name, help)
		}
	}
}
