//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/loadgen"
)

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
	t.Parallel() // its reactor is a child process (this binary's serve, see TestMain)
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

// TestRunInterrupted: SIGINT during a run winds it down: the summary of
// what was measured is printed and written, and the exit status is 130;
// the same SIGINT delivered twice in a row (GNU timeout signals the child,
// then its process group) changes nothing. A second SIGINT a second or
// more later ends the run at once, reporting nothing.
func TestRunInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again time.Duration // 0: one SIGINT
	}{{"once", 0}, {"twice at once", 5 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) { runInterrupted(t, tc.again) })
	}
}

// interruptChildEnv makes the test binary play interruptChild.
const interruptChildEnv = "REACTORLAB_TEST_INTERRUPT_CHILD"

// interruptChild is a run's interrupt handling alone: it says "ready",
// says "interrupted" at the first SIGINT, and exits 0 2 s later unless a
// later SIGINT ends it first.
func interruptChild() int {
	i := onInterrupt()
	defer i.stop()
	fmt.Println("ready")
	<-i.c
	fmt.Println("interrupted")
	time.Sleep(2 * time.Second)
	return 0
}

// TestInterruptAskedAgain: after the first SIGINT, another within
// duplicateWithin changes nothing (the process winds down and exits 0),
// and one later than that ends the process at once by SIGINT.
func TestInterruptAskedAgain(t *testing.T) {
	t.Parallel() // a process of its own
	for _, tc := range []struct {
		name   string
		again  time.Duration
		killed bool
	}{{"twice at once", 5 * time.Millisecond, false}, {"asked again", duplicateWithin + 200*time.Millisecond, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), interruptChildEnv+"=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			sc := bufio.NewScanner(out)
			if !sc.Scan() || sc.Text() != "ready" {
				t.Fatalf("child said %q, want ready", sc.Text())
			}
			cmd.Process.Signal(syscall.SIGINT)
			if !sc.Scan() || sc.Text() != "interrupted" {
				t.Fatalf("child said %q, want interrupted", sc.Text())
			}
			time.Sleep(tc.again)
			t0 := time.Now()
			cmd.Process.Signal(syscall.SIGINT)
			for sc.Scan() {
			}
			err = cmd.Wait()
			el := time.Since(t0)
			var ee *exec.ExitError
			killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT
			if killed != tc.killed {
				t.Errorf("second SIGINT %v after the first: ended by it %v (%v), want %v", tc.again, killed, err, tc.killed)
			}
			if tc.killed && el > time.Second {
				t.Errorf("ended %v after the second SIGINT: not at once", el)
			}
		})
	}
}

// startInterruptibleRun starts a 30-s run of lt on loopback as a child
// process and returns once it reports it is measuring.
func startInterruptibleRun(t *testing.T) (cmd *exec.Cmd, dir string, stdout *bytes.Buffer, errText *strings.Builder, copied chan struct{}) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "cell")
	cmd = exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"=run --reactor lt --hot 1 --inflight 4 --duration 30s --warmup 0s --interval 200ms --lab off --out "+dir)
	stdout = new(bytes.Buffer)
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	measuring := make(chan struct{})
	errText = new(strings.Builder)
	copied = make(chan struct{})
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
	return cmd, dir, stdout, errText, copied
}

// runInterrupted sends SIGINT to a run, and again after again (0: once),
// and checks that it wound down and reported.
func runInterrupted(t *testing.T, again time.Duration) {
	cmd, dir, stdout, errText, copied := startInterruptibleRun(t)
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	if again > 0 {
		time.Sleep(again)
		cmd.Process.Signal(syscall.SIGINT)
	}
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
