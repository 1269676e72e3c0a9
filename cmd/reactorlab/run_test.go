//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results"
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

// runOnce runs `reactorlab run` with args and a fresh --out, and returns
// the cell result it wrote, its stdout, and the directory.
func runOnce(t *testing.T, args ...string) (*harness.CellResult, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cell")
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"run", "--out", dir}, args...), &stdout, &stderr)
	raw, err := os.ReadFile(filepath.Join(dir, harness.CellSummaryFile))
	if err != nil {
		t.Fatalf("run %q: exit %d, no %s: %v\nstdout:\n%s\nstderr:\n%s", args, code, harness.CellSummaryFile, err, stdout.String(), stderr.String())
	}
	var res harness.CellResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%s: %v", harness.CellSummaryFile, err)
	}
	if code != 0 || !res.Valid {
		t.Fatalf("run %q: exit %d, valid %v: %q\nstdout:\n%s\nstderr:\n%s", args, code, res.Valid, res.Invalid, stdout.String(), stderr.String())
	}
	return &res, stdout.String(), dir
}

// TestRunReference measures the lt reactor for a short while, as the
// README shows, and checks what a reader of the files relies on: the
// summary, the ledger, the interval log and the server's own statistics
// agree.
func TestRunReference(t *testing.T) {
	res, stdout, dir := runOnce(t, "--reactor", "lt", "--hot", "1", "--inflight", "8", "--control-every", "10ms",
		"--duration", "1s", "--warmup", "300ms", "--stop-at", "900ms")
	for _, want := range []string{"reactorlab run: lt", "Latency distribution", "data", "control", "Throughput", "Ledger", "VALID"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	t.Logf("mode %s (fallback %q)\n%s", res.Lab.Mode, res.Lab.Fallback, stdout)
	load := res.Load
	if load == nil || load.Totals.Echoed == 0 || load.Totals.Sent == 0 {
		t.Fatalf("no data frames echoed: %+v", load)
	}
	if load.Stop == nil || load.Stop.Status != "acknowledged" || load.Stop.Ledger == nil || !load.Stop.Balanced {
		t.Fatalf("STOP probe: %+v", load.Stop)
	}
	// Every frame the reactor accepted was answered, and we saw each one.
	if res.Server == nil {
		t.Fatal("no final statistics from the reactor")
	}
	if got, want := load.Totals.Echoed+load.Totals.Rejected, res.Server.Ledger.Accepted; got != want {
		t.Errorf("load generator saw %d answers, reactor accepted %d", got, want)
	}
	f, err := os.Open(filepath.Join(dir, loadgen.HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ivs, err := results.ReadHlog(f)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, iv := range ivs {
		tags[iv.Tag] = true
	}
	for _, want := range []string{loadgen.ClassData, loadgen.ClassControl, loadgen.ClassStop} {
		if !tags[want] {
			t.Errorf("interval log has no %q intervals (tags %v)", want, tags)
		}
	}
}

// TestRunBlackBox measures a server command: the reference reactor run as
// a black box (data and control on one address, no STOP).
func TestRunBlackBox(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	target := "cmd:" + asMainEnv + "=1 " + exe + " serve --listen {addr}"
	res, stdout, _ := runOnce(t, "--target", target, "--hot", "2", "--steady", "1", "--rate", "500",
		"--duration", "1s", "--warmup", "200ms")
	if res.Server != nil {
		t.Errorf("a black box has no reactor statistics, got %+v", res.Server)
	}
	if res.Load.Totals.Echoed == 0 || res.Load.ControlTotals.Echoed == 0 {
		t.Fatalf("nothing echoed: data %+v control %+v", res.Load.Totals, res.Load.ControlTotals)
	}
	if !strings.Contains(stdout, "data-uncorrected") {
		t.Errorf("a steady source's summary shows both data classes:\n%s", stdout)
	}
}

// TestRunBlackBoxCPU: a black box's CPU is the server's own, not that of
// the shell that started it (which never waits for a server killed with
// it): the example echo server, given as a simple command, is exec'd.
func TestRunBlackBoxCPU(t *testing.T) {
	bin := buildEcho(t)
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "cell")
	jsonPath := filepath.Join(t.TempDir(), "result.json")
	code := run([]string{"run", "--target", "cmd:" + bin + " --listen {addr}", "--hot", "2", "--inflight", "8",
		"--control-every", "0", "--duration", "1s", "--warmup", "200ms", "--cpus", "none", "--json", jsonPath, "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	// --json FILE: the result in the file, the summary on stdout still.
	if !strings.Contains(stdout.String(), "Verdict      VALID") {
		t.Errorf("stdout lacks the summary:\n%s", stdout.String())
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Lab struct {
			Server struct {
				UserNs int64 `json:"user_ns"`
				SysNs  int64 `json:"sys_ns"`
			} `json:"server"`
		} `json:"lab"`
		Load struct {
			Totals struct {
				Echoed uint64 `json:"echoed"`
			} `json:"totals"`
		} `json:"load"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	cpu := res.Lab.Server.UserNs + res.Lab.Server.SysNs
	frames := res.Load.Totals.Echoed
	if frames == 0 {
		t.Fatal("nothing echoed")
	}
	// An echo costs at least a read and a write: well above 0.2 µs a
	// frame even in large batches; the shell alone measures ~0.
	perFrame := float64(cpu) / float64(frames)
	t.Logf("server CPU %d ns for %d frames: %.0f ns a frame", cpu, frames, perFrame)
	if perFrame < 200 {
		t.Errorf("server CPU %.0f ns a frame over %d frames: the shell's, not the server's?", perFrame, frames)
	}
}

// TestRunServerCPUCap runs a server under a load that keeps it busy with
// its CPU capped at 0.3: lt itself, and the reactor as a black box behind
// a shell that stays as its parent (a leading assignment keeps the shell),
// where the process doing the work is not the one started. The kernel must
// have throttled the cgroup (so the cap was on the busy process, in force
// and binding); lt's CPU time must stay within the cap (1.25 × the cap
// over its life, plus 0.2 s for its start, before the cap); the load
// generator must not name itself the limit; and the cgroup must be gone.
func TestRunServerCPUCap(t *testing.T) {
	if err := proc.CheckCPULimit(); err != nil {
		t.Skip("cannot cap a process's CPU here:", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const share = 0.3
	for _, tc := range []struct {
		name   string
		server []string
		procs  int // processes moved into the cgroup, at least
	}{
		{"reference", []string{"--reactor", "lt"}, 1},
		{"wrapped black box", []string{"--target", "cmd:" + asMainEnv + "=1 " + exe + " serve --listen {addr}"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.server, "--hot", "100", "--inflight", "16", "--control-every", "0",
				"--duration", "1s", "--warmup", "300ms", "--server-cpu", fmt.Sprint(share))
			res, stdout, _ := runOnce(t, args...)
			srv := res.Lab.Server
			if srv == nil || srv.CPULimit == nil {
				t.Fatalf("no CPU cap recorded:\n%s", stdout)
			}
			l := srv.CPULimit
			t.Logf("cap %+v; server CPU %v over %v\n%s", *l, time.Duration(srv.UserNs+srv.SysNs), srv.Elapsed, stdout)
			if l.Share != share || l.Throttled == 0 || l.Periods == 0 || l.Processes < tc.procs {
				t.Errorf("cap %+v: want share %v, throttled periods, at least %d processes", *l, share, tc.procs)
			}
			if bound := time.Duration(1.25*share*float64(srv.Elapsed)) + 200*time.Millisecond; tc.procs == 1 &&
				time.Duration(srv.UserNs+srv.SysNs) > bound {
				t.Errorf("server CPU %v over %v, capped at %v CPU: above %v", time.Duration(srv.UserNs+srv.SysNs), srv.Elapsed, share, bound)
			}
			if res.Load.SelfCheck.Limit == "loadgen" {
				t.Errorf("self-check limit %q: the generator, not the capped server", res.Load.SelfCheck.Limit)
			}
			if !strings.Contains(stdout, "capped at 0.3 CPU") {
				t.Errorf("the summary does not say the server was capped:\n%s", stdout)
			}
			if _, err := os.Stat(l.Cgroup); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("cgroup %s left behind: %v", l.Cgroup, err)
			}
		})
	}
}

// buildEcho builds examples/echo into a temporary directory (skipping the
// test where there is no go command) and returns its path.
func buildEcho(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "echo")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example server")
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, "../../examples/echo").CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
	return bin
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
	for _, name := range []string{"--duration", "--warmup", "--control-every", "--stop-at", "--drain", "--interval", "--grace", "--start-timeout", "--tick", "--app-timer"} {
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
// within --start-timeout + 1 s, naming the target (as the user wrote it),
// the cause and the server's stderr, with a hint to wait longer where that
// may help; nothing is left in --out. On loopback the refusal is word for
// word footprint's (and so conform's: the same conformance.StartError),
// but for what was not done and the port.
func TestRunRefusesATargetThatDoesNotStart(t *testing.T) {
	const startTimeout = 500 * time.Millisecond
	lab := "auto" // one case in the lab, where it works: it costs ~50 ms
	// Unique to this process: another go test of this package may be
	// running the same test.
	sleep := fmt.Sprintf("sleep 1000.%d", os.Getpid())
	const head = "reactorlab run: the target could not be started, so nothing was measured: cmd:"
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
	} {
		out := filepath.Join(t.TempDir(), "cell")
		msg := refusal(t, startTimeout+time.Second, "run", "--target", "cmd:"+tc.target, "--lab", tc.lab,
			"--start-timeout", startTimeout.String(), "--duration", "1s", "--out", out)
		if !strings.HasPrefix(msg, head+tc.target+": ") {
			t.Errorf("%q (lab %s): %q does not begin %q", tc.target, tc.lab, msg, head+tc.target+": ")
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q (lab %s): %q does not say %q", tc.target, tc.lab, msg, w)
			}
		}
		if first, _, _ := strings.Cut(msg, "\n"); strings.Contains(msg, "--help") || strings.Contains(first, "/bin/sh") {
			t.Errorf("%q: a target's refusal points to --help, or names the shell (not the target): %q", tc.target, msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q: refused, yet %s is there", tc.target, out)
		}
		if tc.likeOthers {
			theirs := refusal(t, startTimeout+time.Second, "footprint", "--target", "cmd:"+tc.target, "--conns", "10",
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

// TestRunJSONIsAllOfStdout: with --json -, stdout is the result and
// nothing else (progress and the summary go to stderr). The run is control probes
// alone (--hot 0): its progress lines and progress.jsonl count no data
// frame, as its summary does, and the PINGs apart.
func TestRunJSONIsAllOfStdout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cell")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--reactor", "lt", "--hot", "0", "--control-every", "10ms", "--duration", "1s", "--warmup", "200ms",
		"--interval", "200ms", "--json", "-", "--out", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	var res harness.CellResult
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimSpace(rest)) != 0 || dec.More() {
		t.Fatalf("stdout holds more than the JSON: %q", rest)
	}
	if !res.Valid || res.Load == nil || res.Load.Totals.Sent != 0 || res.Load.ControlTotals.Echoed == 0 {
		t.Fatalf("result: valid %v %q, load %+v", res.Valid, res.Invalid, res.Load)
	}
	if !strings.Contains(stderr.String(), "Verdict      VALID") || !strings.Contains(stderr.String(), "control: ") {
		t.Errorf("stderr lacks the summary or the progress:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "frames/s, p99") {
		t.Errorf("progress shows data for a run without data sources:\n%s", stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, harness.CellProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var last loadgen.Progress
	for _, l := range lines {
		var p loadgen.Progress
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("%s: %q: %v", harness.CellProgressFile, l, err)
		}
		if p.Sent != 0 || p.Echoed != 0 || p.Rate != 0 {
			t.Errorf("progress at %v: sent %d echoed %d, %.0f frames/s of data in a run of PINGs alone", p.Elapsed, p.Sent, p.Echoed, p.Rate)
		}
		last = p
	}
	if len(lines) < 3 || last.ControlEchoed == 0 {
		t.Errorf("%d progress lines, last %+v: want the PINGs counted apart", len(lines), last)
	}
}

// TestFootprintJSON: footprint's --json takes FILE|- as every command's
// does: with -, stdout is the result and nothing else (the line goes to
// stderr); with a FILE, the result is in it and the line on stdout.
func TestFootprintJSON(t *testing.T) {
	t.Setenv(asMainEnv, "1") // the reactor is this binary's serve
	jsonPath := filepath.Join(t.TempDir(), "footprint.json")
	for _, to := range []string{"-", jsonPath} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"footprint", "--target", "lt", "--conns", "100", "--json", to}, &stdout, &stderr); code != 0 {
			t.Fatalf("--json %s: exit %d\nstderr:\n%s", to, code, stderr.String())
		}
		human, raw := stdout.String(), stdout.Bytes()
		if to != "-" {
			human, raw = stdout.String(), nil
			var err error
			if raw, err = os.ReadFile(jsonPath); err != nil {
				t.Fatal(err)
			}
		} else {
			human = stderr.String()
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		var res struct {
			Target string `json:"target"`
			Conns  int    `json:"conns"`
		}
		if err := dec.Decode(&res); err != nil || res.Conns != 100 || res.Target == "" {
			t.Fatalf("--json %s: not the result (%v): %+v\n%s", to, err, res, raw)
		}
		if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimSpace(rest)) != 0 || dec.More() {
			t.Errorf("--json %s: more than the JSON: %q", to, rest)
		}
		if !strings.HasPrefix(human, res.Target+": 100 idle connections: RSS ") || strings.Count(human, "\n") != 1 {
			t.Errorf("--json %s: the line is not where it should be: %q", to, human)
		}
	}
}

// TestRunHelpOnStdout: run, serve and loadgen print their help on stdout:
// the synopsis first, a paragraph with the exit codes, the flags.
func TestRunHelpOnStdout(t *testing.T) {
	for _, name := range []string{"run", "serve", "loadgen"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{name, "--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, stderr.String())
		}
		help := stdout.String()
		if !strings.HasPrefix(help, "usage: reactorlab "+name+" ") || !strings.Contains(help, "Exit 0") || !strings.Contains(help, "\nflags:\n  --") {
			t.Errorf("%s --help:\n%s", name, help)
		}
	}
}

// TestRunInterrupted: SIGINT during a run winds it down: the summary of
// what was measured is printed and written, and the exit status is 130.
func TestRunInterrupted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cell")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"=run --reactor lt --hot 1 --inflight 4 --duration 30s --warmup 0s --interval 200ms --lab off --out "+dir)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	measuring := make(chan struct{})
	var errText strings.Builder
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			errText.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "measuring") {
				once = true
				close(measuring)
			}
		}
	}()
	select {
	case <-measuring:
	case <-time.After(20 * time.Second):
		t.Fatal("no progress line in 20 s")
	}
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	code := waitExit(t, cmd)
	<-copied
	if el := time.Since(t0); el > 10*time.Second {
		t.Errorf("exited %v after SIGINT", el)
	}
	if code != 130 {
		t.Errorf("exit %d, want 130\nstderr:\n%s", code, errText.String())
	}
	out := stdout.String()
	for _, want := range []string{"Throughput", "Verdict      INVALID", "interrupted", "Ledger"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, harness.CellSummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var res harness.CellResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Load == nil || res.Load.Totals.Echoed == 0 || !res.Load.Interrupted {
		t.Errorf("summary.json: %v, load %+v", err, res.Load)
	}
}
