//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// childArgsEnv makes the test binary act as the reactorlab command, so a
// test can signal a real process; asMainEnv makes it act as the command
// with its own arguments (how conform starts reference reactors: it runs
// its own executable with "serve ...").
const (
	childArgsEnv = "REACTORLAB_TEST_MAIN_ARGS"
	asMainEnv    = "REACTORLAB_TEST_AS_MAIN"
)

func TestMain(m *testing.M) {
	// The lab, the reactor and the load generator of `run` are this binary
	// in their roles.
	lab.RunRoleIfChild()
	if args := os.Getenv(childArgsEnv); args != "" {
		os.Exit(run(strings.Fields(args), os.Stdout, os.Stderr))
	}
	if os.Getenv(interruptChildEnv) == "1" {
		os.Exit(interruptChild())
	}
	if os.Getenv(denyIOURingEnv) == "1" {
		if err := denyIOURing(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Every process this binary starts as itself, playing no role and
	// given no arguments by environment, is the command: conform and
	// footprint start their reference targets as their own executable
	// with "serve ...". Set once here, not per test, so that those tests
	// can run side by side.
	if err := os.Setenv(asMainEnv, "1"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func TestServeRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reactor", "nginx"}, "--reactor"},
		{[]string{"--budget-input", "0"}, "budget-input"},
		{[]string{"--budget-bytes", "10"}, "budget-bytes"},
		{[]string{"--out-low", "2000000"}, "out-low"},
		{[]string{"--out-cap", "1000"}, "out-high"},
		{[]string{"--timer", "sometimes"}, "timer"},
		{[]string{"--tick", "1ns"}, "tick"},
		{[]string{"--callback", "exp:"}, "callback"},
		{[]string{"--fault", "gremlins"}, "gremlins"},
		{[]string{"--fault", "missed-rearm:every=0"}, "missed-rearm"},
		{[]string{"--threads", "0"}, "threads"},
		{[]string{"--lifetime", "0s"}, "lifetime"},
		{[]string{"--reactor", "oneshot", "--workers", "2"}, "workers"},
		{[]string{"--budget-input", "many"}, "budget-input"},
		{[]string{"extra"}, "extra"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"serve"}, tc.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr.String(), tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("serve %v wrote to stdout: %q", tc.args, stdout.String())
		}
	}
}

func TestServeHelpListsDefaults(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"serve", "--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("--help exit %d, stderr %q", code, stderr.String())
	}
	help := stdout.String()
	if !strings.HasPrefix(help, "usage: reactorlab serve ") {
		t.Errorf("--help does not begin with the synopsis:\n%s", help)
	}
	for _, want := range []string{"--budget-input int", "(default 32)", "--out-high", "(default 1048576)", "--timer mode", "--callback cost", "--workers", "--prio-data-budget", "(default 500µs)", "Exit 0"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// TestServeDurationsSayTheirUnit: every duration flag of serve, the
// reactor's configuration included, refuses a bare number saying what it
// wants; so does each flag of a form of its own.
func TestServeDurationsSayTheirUnit(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--tick", "3", "want a number with a unit"},
		{"--lifetime", "3", "want a number with a unit"},
		{"--budget-time", "3", "want a number with a unit"},
		{"--stop-grace", "3", "want a number with a unit"},
		{"--callback", "50", "accepted forms"},
		{"--wait", "spin", "want poll-first or block"},
		{"--stats", "maybe", "want on or off"},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"serve", tc.flag, tc.value}, &stdout, &stderr)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != exitUsage || stdout.Len() != 0 || len(lines) != 2 ||
			!strings.HasPrefix(lines[0], "reactorlab serve: "+tc.flag+" ") || !strings.Contains(lines[0], tc.want) {
			t.Errorf("serve %s %s: exit %d, stderr:\n%s\nwant one line naming %s and %q, then the pointer to --help", tc.flag, tc.value, code, stderr.String(), tc.flag, tc.want)
		}
	}
}

// TestServeRefusesABadAddress: a listen or control-listen address the
// reactor could not listen on is refused before anything starts: exit 2,
// one message naming the flag and what is wrong, nothing on stdout; run
// (which sets both itself) refuses the same values in a --reactor's
// configuration as CheckServe words them.
func TestServeRefusesABadAddress(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--listen", "notanaddr", `--listen = "notanaddr": missing port in address (accepted: IP:port or localhost:port, port 0 picks one)`},
		{"--listen", "example.com:0", `--listen = "example.com:0": host "example.com" is not an IP address`},
		{"--listen", "127.0.0.1:65536", `--listen = "127.0.0.1:65536": port "65536" is not a port number`},
		{"--control-listen", "127.0.0.1", `--control-listen = "127.0.0.1": missing port in address`},
	} {
		msg := refusal(t, time.Second, "serve", tc.flag, tc.value)
		if lines := strings.Split(strings.TrimSpace(msg), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "reactorlab serve: "+tc.want) {
			t.Errorf("serve %s %s:\n%s\nwant %q, then the pointer to --help", tc.flag, tc.value, msg, tc.want)
		}
	}
	for _, ok := range []string{"127.0.0.1:0", "localhost:0", ":0", "[::1]:0"} {
		cfg := reactors.DefaultConfig()
		cfg.Listen = ok
		if err := designs.ValidateFor(reactors.LT, cfg); err != nil {
			t.Errorf("listen %q: %v", ok, err)
		}
	}
}

var addrLine = regexp.MustCompile(`data=(\S+) control=(\S+)`)

// startServe runs the command as a child process and returns it with the
// addresses it printed.
func startServe(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(append([]string{"serve"}, args...), " "))
	stdout := new(bytes.Buffer)
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := addrLine.FindStringSubmatch(sc.Text()); m != nil {
				lines <- m[1] + " " + m[2]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case l := <-lines:
		data, ctl, _ := strings.Cut(l, " ")
		return cmd, stdout, data, ctl
	case <-time.After(20 * time.Second):
		t.Fatal("serve printed no addresses")
	}
	return nil, nil, "", ""
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit")
	}
	return -1
}

type finalStats struct {
	StoppedBy string      `json:"stopped_by"`
	Ledger    wire.Ledger `json:"ledger"`
	Counters  struct {
		FramesEchoed uint64 `json:"frames_echoed"`
	} `json:"counters"`
	GoMaxProcs int `json:"gomaxprocs"`
}

func parseFinal(t *testing.T, out []byte) finalStats {
	t.Helper()
	var f finalStats
	if bytes.Count(bytes.TrimSpace(out), []byte("\n")) != 0 {
		t.Fatalf("stdout is not one JSON line: %q", out)
	}
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	return f
}

// serve stops on SIGTERM and on a STOP frame, and prints one JSON object.
func TestServeStops(t *testing.T) {
	t.Parallel() // its target is a process of its own, and it changes no state of this one
	for _, how := range []string{"SIGTERM", "STOP"} {
		t.Run(how, func(t *testing.T) {
			cmd, stdout, data, ctl := startServe(t, "--reactor", "prio-thread", "--timer", "deadline")
			c, err := reactortest.Dial(data, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i := 0; i < 10; i++ {
				if err := c.Send(wire.KindData, 1, uint64(i), []byte(fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
				if _, _, err := c.Recv(5 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if how == "SIGTERM" {
				cmd.Process.Signal(syscall.SIGTERM)
			} else if l, err := reactortest.StopFrame(ctl, 10*time.Second); err != nil || l.Accepted != 10 || !l.Balanced() {
				t.Fatalf("STOP_ACK ledger %+v, %v", l, err)
			}
			if code := waitExit(t, cmd); code != 0 {
				t.Fatalf("exit %d", code)
			}
			f := parseFinal(t, stdout.Bytes())
			if f.Ledger.Accepted != 10 || f.Ledger.Completed != 10 || f.Counters.FramesEchoed != 10 || f.GoMaxProcs < 3 {
				t.Fatalf("final stats %+v", f)
			}
			if want := map[string]string{"SIGTERM": "signal terminated", "STOP": "STOP frame"}[how]; f.StoppedBy != want {
				t.Fatalf("stopped_by %q, want %q", f.StoppedBy, want)
			}
		})
	}
}
