//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/internal/cli"
)

func TestConformRefusesBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--target is required"},
		{[]string{"--target", "nginx"}, "--target"},
		{[]string{"--target", "cmd:"}, "needs a command"},
		{[]string{"--target", "cmd:true", "--fault", "no-drain"}, "reference targets only"},
		{[]string{"--target", "lt", "--fault", "gremlins"}, "gremlins"},
		{[]string{"--target", "lt", "--case", "Q9"}, "Q9"},
		{[]string{"--target", "lt", "--case", ","}, `--case ",": names nothing`},
		{[]string{"--target", "lt", "--case", ""}, `--case "": names nothing`},
		{[]string{"--target", "lt", "--case", "F1", "--case", " "}, `--case " ": names nothing`},
		{[]string{"--target", "lt", "extra"}, "extra"},
		{[]string{"--target", "lt", "--timeout", "soon"}, "timeout"},
		{[]string{"--target", "lt", "--timeout", "-1s"}, "--timeout"},
		{[]string{"--target", "lt", "--start-timeout", "0s"}, "--start-timeout"},
		{[]string{"--target", "lt", "--json", "-", "--junit", "-"}, "both want stdout"},
		{[]string{"--target", "lt", "--stop", "sigkill"}, `--stop "sigkill"`},
		{[]string{"--target", "lt", "--stop", "sigterm", "--stop-grace", "0s"}, "--stop-grace"},
		{[]string{"--target", "lt", "--retries", "4"}, "--retries 4: out of range 0..3"},
		{[]string{"--target", "lt", "--retries", "-1"}, "--retries -1"},
		{[]string{"--target", "lt", "--control"}, "--control applies to cmd: targets only"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"conform"}, tc.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("conform %v: exit %d, stdout %q, stderr %q; want exit 2 naming %q, nothing on stdout", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

func TestConformList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"conform", "--list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, c := range cases.Catalogue() {
		if !strings.Contains(stdout.String(), c.ID+"  "+c.Title) {
			t.Errorf("--list lacks %s %q:\n%s", c.ID, c.Title, stdout.String())
		}
	}
}

// A reference target runs as a child process of this executable: pass on
// the clean reactor, fail (exit 1) on a mutant, with the JSON and JUnit
// reports agreeing with the table.
func TestConformReferenceProcess(t *testing.T) {
	t.Parallel() // its reactor is a child process (this binary's serve, see TestMain)
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	var stdout, stderr bytes.Buffer
	code := run([]string{"conform", "--target", "et", "--case", "F1,F2,X2", "--json", jsonPath, "--junit", junitPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("clean et: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "process:et: 3 passed, 0 failed, 0 skipped") {
		t.Fatalf("table:\n%s", stdout.String())
	}
	var rep conformance.Report
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || rep.Summary.Pass != 3 {
		t.Fatalf("json report %+v (%v)", rep, err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if b, err := os.ReadFile(junitPath); err != nil || xml.Unmarshal(b, &suite) != nil || suite.Tests != 3 || suite.Failures != 0 {
		t.Fatalf("junit report %+v (%v)", suite, err)
	}

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"conform", "--target", "et", "--fault", "no-drain", "--case", "F2"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "F2") || !strings.Contains(stdout.String(), "fail") {
		t.Fatalf("et + no-drain: exit %d, want 1 with F2 failing\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "; 1 case\n") {
		t.Errorf("the start line does not count one case in the singular:\n%s", stderr.String())
	}
}

// The suite inside a lab of its own (--lab asks for the lab, never
// loopback): it gives the same verdicts, exits with the suite's status,
// writes its reports where it was asked to, and the lab's audit is clean
// after a clean run and after a failing one.
func TestConformInLab(t *testing.T) {
	// Not parallel: the lab's leak audit counts every descendant of this
	// process, another test's target included.
	if err := lab.Check(context.Background()); err != nil {
		if required, why := lab.Required(); required || !errors.Is(err, lab.ErrUnavailable) {
			t.Fatalf("the lab must work here (%s): %v", why, err)
		}
		t.Skipf("no lab here: %v", err)
	}
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"conform", "--lab", "--target", "lt", "--case", "F1,R3", "--json", jsonPath}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "process:lt: 2 passed, 0 failed") ||
		!strings.Contains(stderr.String(), "ran in the lab") || !strings.Contains(stderr.String(), "audit clean") {
		t.Fatalf("clean lt in the lab: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var rep conformance.Report
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || rep.Summary.Pass != 2 {
		t.Fatalf("json report %+v (%v)", rep, err)
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"conform", "--target", "lt", "--fault", "drop-partial", "--case", "F1", "--lab"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "F1") || !strings.Contains(stdout.String(), "fail") ||
		!strings.Contains(stderr.String(), "audit clean") {
		t.Fatalf("lt + drop-partial in the lab: exit %d, want 1 with F1 failing and a clean lab\n%s\n%s", code, stdout.String(), stderr.String())
	}

	// --json -: the JSON alone on stdout, the table on stderr.
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"conform", "--lab", "--target", "lt", "--case", "F1,R3", "-v", "--json", "-"}, &stdout, &stderr)
	rep = conformance.Report{}
	if err := json.Unmarshal(stdout.Bytes(), &rep); code != 0 || err != nil || rep.Summary.Pass != 2 ||
		!strings.Contains(stderr.String(), "process:lt: 2 passed, 0 failed") || !strings.Contains(stderr.String(), "audit clean") {
		t.Fatalf("--json - in the lab: exit %d (%v)\n%s\n%s", code, err, stdout.String(), stderr.String())
	}

	// A refusal inside the lab is the suite's one message, all of it
	// (more than the 4 KiB of a child's stderr the harness keeps), and
	// exit 2: no word of the lab's.
	label := "echo boom >&2; exit 3 # " + strings.Repeat("x", 5000)
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"conform", "--lab", "--target", "cmd:" + label, "--json", "-"}, &stdout, &stderr)
	msg := stderr.String()
	if code != exitUsage || stdout.Len() != 0 || len(msg) <= 4<<10 ||
		!strings.HasPrefix(msg, "reactorlab conform: the target could not be started, so no case was run: cmd:"+label+": exited (exit status 3)") ||
		strings.Count(msg, "reactorlab conform") != 1 || !strings.HasSuffix(msg, "\n    boom\n") {
		t.Fatalf("a target that cannot start, in the lab: exit %d, stdout %q, %d bytes of stderr; want exit 2 and the one refusal, whole:\n%s", code, stdout.String(), len(msg), msg)
	}
}

// An inconclusive case is counted apart in the table, the JSON and the
// JUnit report; it does not fail the run unless --strict says so.
func TestConformInconclusive(t *testing.T) {
	t.Parallel() // its target is a process of its own, and it changes no state of this one
	bin := buildEcho(t)
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	// A server that never fills its descriptor table: R4 cannot be tested.
	target := "cmd:" + bin + " --max-conns 16"
	var stdout, stderr bytes.Buffer
	code := run([]string{"conform", "--target", target, "--case", "R4,F1", "--json", jsonPath, "--junit", junitPath}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "1 passed, 0 failed, 0 skipped, 1 inconclusive") {
		t.Fatalf("exit %d, want 0 with one inconclusive\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var rep conformance.Report
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || rep.Summary.Inconclusive != 1 || rep.Summary.Pass != 1 {
		t.Fatalf("json report %+v (%v)", rep.Summary, err)
	}
	var suite struct {
		Skipped      int `xml:"skipped,attr"`
		Inconclusive int `xml:"inconclusive,attr"`
		Cases        []struct {
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	}
	if b, err := os.ReadFile(junitPath); err != nil || xml.Unmarshal(b, &suite) != nil || suite.Inconclusive != 1 || suite.Skipped != 1 ||
		len(suite.Cases) != 2 || suite.Cases[1].Skipped == nil || !strings.HasPrefix(suite.Cases[1].Skipped.Message, "inconclusive: ") { // F1, then R4
		t.Fatalf("junit report %+v (%v)", suite, err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"conform", "--strict", "--target", target, "--case", "R4"}, &stdout, &stderr); code != 1 {
		t.Fatalf("--strict with an inconclusive case: exit %d, want 1\n%s", code, stdout.String())
	}
}

// --strict fails an inconclusive case only when the run could not
// establish its precondition: one the server's design never offers (the
// example echo writes everything it read before it reads again, so it
// never holds echoes when it reads a FIN) is reported as such and leaves
// the exit status 0, the same every run.
func TestConformStrictSparesTheServersDesign(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: I3 fills three connections (6 s)")
	}
	t.Parallel() // its target is a process of its own, and it changes no state of this one
	bin := buildEcho(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"conform", "--strict", "--target", "cmd:" + bin, "--case", "I3"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "I3 inconclusive (the server's design): ") ||
		!strings.Contains(stdout.String(), "0 passed, 0 failed, 0 skipped, 1 inconclusive (a precondition the server's design never offers") {
		t.Fatalf("--strict on a design that never holds echoes at a FIN: exit %d, want 0 with I3 inconclusive by design\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// A black box with a control address and the stop contract: S2 runs
// against its control address ({control}, or --control with the
// environment variable alone), X3-X5 run with --stop sigterm and are
// skipped without it, saying so.
func TestConformControlAndStop(t *testing.T) {
	t.Parallel() // its target is a process of its own, and it changes no state of this one
	bin := buildEcho(t)
	stopCases, stopPassed := "S2,X3,X4,X5", "4 passed, 0 failed, 0 skipped"
	if testing.Short() {
		// X4 and X5 stop a server each (1.5 s); the conformance package's
		// black-box row runs them.
		stopCases, stopPassed = "S2,X3", "2 passed, 0 failed, 0 skipped"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "cmd:" + bin + " --control {control}", "--case", stopCases, "--stop", "sigterm", "--stop-grace", "3s"}, stopPassed},
		{[]string{"--target", "cmd:" + bin, "--control", "--case", "S2"}, "1 passed, 0 failed, 0 skipped"},
		{[]string{"--target", "cmd:" + bin, "--case", "S2,X3"}, "0 passed, 0 failed, 2 skipped"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"conform", "-v"}, tc.args...), &stdout, &stderr)
		if code != 0 || !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("conform %v: exit %d, want 0 and %q\n%s\n%s", tc.args, code, tc.want, stdout.String(), stderr.String())
		}
		if strings.Contains(tc.want, "skipped") && strings.Contains(tc.want, "2 skipped") && !strings.Contains(stdout.String(), "--stop sigterm") {
			t.Errorf("the stop cases' skip does not say how to opt in:\n%s", stdout.String())
		}
	}
}

// A target that cannot start is refused before any case, once: exit 2,
// nothing on stdout (not even with --json -), one message on stderr naming
// the cause and holding the end of the target's stderr, no line of any
// case, within the start timeout + 1 s; the process is gone afterwards.
// footprint refuses the same way. A server that listens on a port of its
// own, not on the address it was given, is told so, with the port and its
// stdout, and not told to wait longer.
func TestConformRefusesATargetThatCannotStart(t *testing.T) {
	t.Parallel() // its target is a process of its own, and it changes no state of this one
	// Unique to this process: another go test of this package may be
	// running the same test.
	sleep := fmt.Sprintf("sleep 1000.%d1", os.Getpid()) // 1: not run_test.go's sleep, which may run beside it
	elsewhere, port := ownPortServer(t)
	for _, tc := range []struct {
		cmd   string
		wants []string
		nots  []string
	}{
		{"/nonexistent/server --listen {addr}", []string{"cmd:/nonexistent/server --listen {addr}: the program could not be run", "exit status 127", "not found"}, nil},
		{"true", []string{"cmd:true: exited (exit status 0) before it listened", "wrote nothing on stderr"}, nil},
		{"echo boom >&2; exit 3", []string{"exited (exit status 3)", "its stderr ends:\n    boom\n"}, nil},
		{sleep, []string{"nothing accepted connections", "within ", "--start-timeout"}, nil},
		{elsewhere, []string{": it listens on 127.0.0.1:" + port + ", not on the address it was given (127.0.0.1:", "): pass it {addr} or read REACTORLAB_LISTEN",
			"its stdout ends:\n    listening on " + port + "\n"}, []string{"nothing accepted", "--start-timeout"}},
	} {
		for _, cmd := range []string{"conform", "footprint"} {
			t.Run(cmd+" "+tc.cmd, func(t *testing.T) {
				startTimeout := 2 * time.Second
				if cmd == "footprint" {
					startTimeout = time.Second // the same code: a shorter wait
				}
				args := []string{cmd, "--target", "cmd:" + tc.cmd, "--start-timeout", startTimeout.String()}
				if cmd == "conform" {
					args = append(args, "--json", "-")
				} else {
					args = append(args, "--conns", "10")
				}
				var stdout, stderr bytes.Buffer
				t0 := time.Now()
				code := run(args, &stdout, &stderr)
				el := time.Since(t0)
				msg := stderr.String()
				t.Logf("%v, exit %d:\n%s", el.Round(time.Millisecond), code, msg)
				if code != exitUsage || stdout.Len() != 0 {
					t.Errorf("exit %d, stdout %q; want exit 2 and nothing on stdout", code, stdout.String())
				}
				if n := strings.Count(msg, "reactorlab "+cmd+":"); n != 1 || !strings.HasPrefix(msg, "reactorlab "+cmd+": the target could not be started") {
					t.Errorf("want exactly one refusal message, got %d", n)
				}
				for _, w := range tc.wants {
					if !strings.Contains(msg, w) {
						t.Errorf("the refusal lacks %q", w)
					}
				}
				for _, w := range tc.nots {
					if strings.Contains(msg, w) {
						t.Errorf("the refusal says %q", w)
					}
				}
				if caseLine.MatchString(msg) {
					t.Errorf("a case ran or was reported")
				}
				if el > startTimeout+time.Second {
					t.Errorf("refused after %v, start timeout %v", el, startTimeout)
				}
				if pids := processesMatching(strings.Replace(sleep, " ", "\x00", 1) + "\x00"); len(pids) > 0 {
					t.Errorf("the target's process is still there: %v", pids)
				}
			})
		}
	}
}

// caseLine matches a line of conform's progress or table about a case.
var caseLine = regexp.MustCompile(`(?m)^\s*[FRWISTX][0-9]\s`)

// --json - and --junit - put that document alone on stdout (it parses),
// the table on stderr.
func TestConformMachineOutputOnStdout(t *testing.T) {
	t.Parallel() // its reactor is a child process (this binary's serve, see TestMain)
	for _, flag := range []string{"--json", "--junit"} {
		t.Run(flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"conform", "--target", "et", "--case", "F1,X2", flag, "-"}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "process:et: 2 passed, 0 failed") {
				t.Errorf("the table is not on stderr:\n%s", stderr.String())
			}
			if flag == "--json" {
				var rep conformance.Report
				if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Summary.Pass != 2 || rep.Interrupted || len(rep.Results) != 2 {
					t.Fatalf("stdout is not the JSON report (%v): %+v\n%s", err, rep, stdout.String())
				}
				return
			}
			var suite struct {
				XMLName xml.Name `xml:"testsuite"`
				Tests   int      `xml:"tests,attr"`
			}
			if err := xml.Unmarshal(stdout.Bytes(), &suite); err != nil || suite.Tests != 2 {
				t.Fatalf("stdout is not the JUnit report (%v): %+v\n%s", err, suite, stdout.String())
			}
			// xml.Unmarshal reads the first element only: nothing may be
			// before or after it.
			if out := strings.TrimSpace(stdout.String()); !strings.HasPrefix(out, "<?xml") || !strings.HasSuffix(out, "</testsuite>") {
				t.Errorf("stdout holds more than the JUnit document:\n%s", out)
			}
		})
	}
}

// hangEnv makes this test binary a server that accepts connections on
// REACTORLAB_LISTEN and never reads or answers them (until SIGTERM): a
// target that starts well and then stalls every case.
const hangEnv = "REACTORLAB_TEST_HANG_SERVER"

// hangIgnoreTermEnv makes that server ignore SIGTERM once a client has
// sent it a byte (it reads one from each connection), so a case's stop of
// it takes the whole grace while the start check's stop (the readiness
// probe sends nothing) does not.
const hangIgnoreTermEnv = "REACTORLAB_TEST_HANG_IGNORE_TERM"

// hangMarkEnv names a file that server creates when a client has sent it
// a byte: a case (not the start check, which only connects) is under way.
const hangMarkEnv = "REACTORLAB_TEST_HANG_MARK"

// labStopReserveEnv sets conformLabStopReserve in this binary run as the
// command, so that a test can make the suite in the lab miss its time to
// wind down.
const labStopReserveEnv = "REACTORLAB_TEST_LAB_STOP_RESERVE"

func init() {
	if d, err := time.ParseDuration(os.Getenv(labStopReserveEnv)); err == nil {
		conformLabStopReserve = d
	}
	if os.Getenv(hangEnv) != "1" {
		return
	}
	ln, err := net.Listen("tcp", os.Getenv("REACTORLAB_LISTEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "hang server:", err)
		os.Exit(1)
	}
	var held []net.Conn
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		held = append(held, c)
		go func() {
			if n, _ := c.Read(make([]byte, 1)); n > 0 {
				if os.Getenv(hangIgnoreTermEnv) == "1" {
					signal.Ignore(syscall.SIGTERM)
				}
				if mark := os.Getenv(hangMarkEnv); mark != "" {
					os.WriteFile(mark, nil, 0o644)
				}
			}
		}()
	}
}

// hangTarget is the --target of a hanging server, with a token in its
// command line that processesMatching finds, and the file it creates once
// a case has sent it a byte; ignoreTerm makes it ignore SIGTERM from then.
func hangTarget(t *testing.T, ignoreTerm bool) (target, token, mark string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	token = fmt.Sprintf("hang-%d-%d", os.Getpid(), time.Now().UnixNano())
	mark = filepath.Join(t.TempDir(), "case-started")
	env := hangEnv + "=1 " + hangMarkEnv + "=" + mark
	if ignoreTerm {
		env += " " + hangIgnoreTermEnv + "=1"
	}
	return "cmd:env " + env + " " + exe + " " + token, token, mark
}

// --timeout bounds a case whose target started well and then stalls: it
// fails with cause timeout within the bound (+ 2 s to start and stop the
// target on a busy machine).
// (F1's own bound on an echo is 2 s: 1 s is the watchdog's.)
func TestConformTimeoutBoundsAStalledCase(t *testing.T) {
	t.Parallel() // its target is a process of its own, and it changes no state of this one
	target, token, _ := hangTarget(t, false)
	var stdout, stderr bytes.Buffer
	t0 := time.Now()
	code := run([]string{"conform", "--target", target, "--case", "F1", "--timeout", "1s"}, &stdout, &stderr)
	el := time.Since(t0)
	if code != 1 || !strings.Contains(stdout.String(), "F1 fail (timeout)") || !strings.Contains(stdout.String(), "within 1s") {
		t.Fatalf("exit %d, want 1 with F1 failing for cause timeout\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if el > 3*time.Second {
		t.Errorf("took %v with --timeout 1s", el)
	}
	if pids := processesMatching(token); len(pids) > 0 {
		t.Errorf("the target is still there: %v", pids)
	}
}

// SIGINT during a case: the case is interrupted, not failed, the others
// not run; exit 130; the JSON on stdout says the run was interrupted; the
// target is gone.
func TestConformInterrupted(t *testing.T) {
	target, token, mark := hangTarget(t, false)
	code, stdout, stderr := interruptConform(t, mark, nil, "conform", "--target", target, "--case", "F1,F2,F3", "--json", "-")
	if code != cli.ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", code, cli.ExitInterrupted, stderr)
	}
	checkInterruptedReport(t, stdout, stderr)
	if pids := processesMatching(token); len(pids) > 0 {
		t.Errorf("the target is still there: %v", pids)
	}
}

// The same in the lab: the suite is told to stop (SIGTERM) and reports
// what it had done, exit 130, its progress shown while it ran; one that
// does not stop in its time is killed, and then the run still exits 130
// and says the report was lost. Either way nothing is left behind.
func TestConformInterruptedInLab(t *testing.T) {
	if err := lab.Check(context.Background()); err != nil {
		if required, why := lab.Required(); required || !errors.Is(err, lab.ErrUnavailable) {
			t.Fatalf("the lab must work here (%s): %v", why, err)
		}
		t.Skipf("no lab here: %v", err)
	}
	t.Run("reported", func(t *testing.T) {
		target, token, mark := hangTarget(t, false)
		code, stdout, stderr := interruptConform(t, mark, nil, "conform", "--lab", "--target", target, "--case", "F1,F2,F3", "--json", "-")
		if code != cli.ExitInterrupted {
			t.Errorf("exit %d, want %d\n%s", code, cli.ExitInterrupted, stderr)
		}
		checkInterruptedReport(t, stdout, stderr)
		if !strings.Contains(stderr, "audit clean") || strings.Contains(stderr, "lost") {
			t.Errorf("want a clean lab and the report:\n%s", stderr)
		}
		if pids := processesMatching(token); len(pids) > 0 {
			t.Errorf("the target is still there: %v", pids)
		}
	})
	t.Run("killed", func(t *testing.T) {
		// The target ignores SIGTERM once F1 has sent it a byte, so the
		// suite's stop of it takes the whole --grace (3 s); the lab gives
		// the suite 0.5 s to wind down.
		target, token, mark := hangTarget(t, true)
		env := []string{labStopReserveEnv + "=-2.5s"}
		code, stdout, stderr := interruptConform(t, mark, env, "conform", "--lab", "--grace", "3s", "--target", target, "--case", "F1,F2", "--json", "-")
		if code != cli.ExitInterrupted || !strings.Contains(stderr, "was killed (signal: killed): its report is lost") ||
			strings.Contains(stderr, "audit clean") {
			t.Errorf("exit %d, want %d saying the report was lost\nstdout: %s\nstderr: %s", code, cli.ExitInterrupted, stdout, stderr)
		}
		if pids := processesMatching(token); len(pids) > 0 {
			t.Errorf("the target is still there: %v", pids)
		}
	})
}

// interruptConform runs this test binary as the command with args (and
// env added), waits for its cases to start (the line "started and
// listening" on stderr, as it comes) and for the hang server to have
// created mark (F1 has sent it a byte and waits for its echo), sends it
// SIGINT and returns its exit code, stdout and stderr.
func interruptConform(t *testing.T, mark string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), asMainEnv+"=1"), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var errText strings.Builder
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(errPipe)
		once := false
		for sc.Scan() {
			errText.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "started and listening") {
				once = true
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-copied
		cmd.Wait()
		t.Fatalf("conform did not start its cases\n%s", errText.String())
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-copied
			cmd.Wait()
			t.Fatalf("no case sent the hang server a byte within 20 s\n%s", errText.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { <-copied; exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("conform did not end after SIGINT\n%s", errText.String())
	}
	t.Logf("exit %d; stderr:\n%s", cmd.ProcessState.ExitCode(), errText.String())
	return cmd.ProcessState.ExitCode(), out.String(), errText.String()
}

// checkInterruptedReport checks the JSON report on stdout and the table
// on stderr of a run of F1,F2,F3 interrupted during F1.
func checkInterruptedReport(t *testing.T, stdout, stderr string) {
	t.Helper()
	var rep conformance.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	var verdicts []string
	for _, r := range rep.Results {
		verdicts = append(verdicts, r.ID+" "+string(r.Verdict))
	}
	if got := strings.Join(verdicts, ", "); !rep.Interrupted || got != "F1 interrupted, F2 not-run, F3 not-run" || rep.Summary.Fail != 0 {
		t.Errorf("report: interrupted %v, %s, summary %+v", rep.Interrupted, got, rep.Summary)
	}
	if !strings.Contains(stderr, ": 0 passed, 0 failed, 0 skipped, 1 interrupted, 2 not run: the run was interrupted") ||
		!strings.Contains(stderr, "interrupted: 0 cases finished, 1 interrupted, 2 not run") {
		t.Errorf("the table's counts do not agree with the report's:\n%s", stderr)
	}
	if regexp.MustCompile(`\bfail\b`).MatchString(stderr) {
		t.Errorf("an interrupted case reads as a failure:\n%s", stderr)
	}
}

// Help is on stdout, with the synopsis, the description and the flags;
// footprint's --target names its value, not a command.
func TestConformAndFootprintHelp(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		wants []string
	}{
		{"conform", []string{"usage: reactorlab conform --target DESIGN|cmd:'COMMAND'", "\n  --start-timeout duration\n", "(default 10s)", "\n  --json FILE\n", "130"}},
		{"footprint", []string{"usage: reactorlab footprint --target DESIGN|cmd:'COMMAND'", "\n  --target DESIGN|cmd:COMMAND\n", "\n  --start-timeout duration\n"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{tc.cmd, "--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Errorf("%s --help: exit %d, stderr %q", tc.cmd, code, stderr.String())
		}
		for _, w := range tc.wants {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s --help lacks %q:\n%s", tc.cmd, w, stdout.String())
			}
		}
		if strings.Contains(stdout.String(), "reactorlab serve\n") {
			t.Errorf("%s --help shows a command as a value's name:\n%s", tc.cmd, stdout.String())
		}
	}
}

// processesMatching lists the pids whose command line (NUL-separated)
// contains s.
func processesMatching(s string) []string {
	var pids []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// ownPortServer is a shell command running a real server (examples/echo)
// that ignores the address it is given ({addr}, REACTORLAB_LISTEN) and
// listens on a port of its own instead, given by its own flag: an
// ephemeral port free when picked here. It says so on stdout first
// ("listening on PORT"). It returns the command and the port.
func ownPortServer(t *testing.T) (cmd, port string) {
	t.Helper()
	echo := buildEcho(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return fmt.Sprintf("echo listening on %s; exec %s --listen 127.0.0.1:%s", port, echo, port), port
}
