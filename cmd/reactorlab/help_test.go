package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCommandHasHelpOnStdout: `reactorlab CMD --help` and
// `reactorlab help CMD` print the same help on stdout, nothing on stderr,
// exit 0: a synopsis line naming the command, a paragraph, the flags
// (under "flags:", or the command's own headings).
func TestEveryCommandHasHelpOnStdout(t *testing.T) {
	for _, c := range subcommands {
		if c.main == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{c.name, "--help"}, &stdout, &stderr); code != 0 {
				t.Fatalf("%s --help: exit %d, want 0; stderr:\n%s", c.name, code, stderr.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("%s --help wrote to stderr:\n%s", c.name, stderr.String())
			}
			help := stdout.String()
			if !strings.HasPrefix(help, "usage: reactorlab "+c.name) {
				t.Errorf("%s --help does not begin with its synopsis:\n%s", c.name, help)
			}
			paragraphs := strings.Split(strings.TrimSpace(help), "\n\n")
			if len(paragraphs) < 2 || strings.HasPrefix(paragraphs[1], "flags:") {
				t.Errorf("%s --help has no description paragraph after its synopsis:\n%s", c.name, help)
			}
			if !regexp.MustCompile(`\n[a-z][^\n]*:\n  --`).MatchString(help) {
				t.Errorf("%s --help lists no flags:\n%s", c.name, help)
			}
			if strings.Contains(help, "reactorlab serve\n") && c.name != "serve" {
				t.Errorf("%s --help shows a command as a value's name:\n%s", c.name, help)
			}
			var viaHelp, viaHelpErr bytes.Buffer
			if code := run([]string{"help", c.name}, &viaHelp, &viaHelpErr); code != 0 || viaHelp.String() != help {
				t.Errorf("help %s: exit %d, and it differs from %s --help:\n%s", c.name, code, c.name, viaHelp.String())
			}
		})
	}
}

// TestEveryCommandRefusesAnUnknownFlagInTwoLines: a usage error is the
// error and one line pointing to --help, on stderr, exit 2; stdout empty.
func TestEveryCommandRefusesAnUnknownFlagInTwoLines(t *testing.T) {
	for _, c := range subcommands {
		if c.main == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{c.name, "--no-such-flag"}, &stdout, &stderr)
			want := "reactorlab " + c.name + ": unknown flag --no-such-flag\n" +
				"Run 'reactorlab " + c.name + " --help' for usage.\n"
			if code != exitUsage || stdout.Len() != 0 || stderr.String() != want {
				t.Errorf("exit %d (want %d), stdout %q, stderr:\n%s\nwant:\n%s", code, exitUsage, stdout.String(), stderr.String(), want)
			}
		})
	}
}

func TestTopLevelHelpAndRefusals(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		stdoutHas  string
		stderrHas  string
		stderrOnly bool
	}{
		{[]string{"--help"}, 0, "usage: reactorlab COMMAND", "", true},
		{[]string{"help"}, 0, "usage: reactorlab COMMAND", "", true},
		{[]string{"help", "--help"}, 0, "usage: reactorlab COMMAND", "", true},
		{[]string{"help", "help"}, 0, "usage: reactorlab COMMAND", "", true},
		{nil, exitUsage, "", "usage: reactorlab COMMAND", false},
		{[]string{"bogus"}, exitUsage, "", "reactorlab: unknown command \"bogus\"\nRun 'reactorlab --help' for usage.\n", true},
		{[]string{"--bogus"}, exitUsage, "", "reactorlab: unknown flag \"--bogus\"\n", false},
		{[]string{"help", "bogus"}, exitUsage, "", "reactorlab help: unknown command \"bogus\"\n", false},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d", tc.args, code, tc.code)
		}
		if tc.stdoutHas == "" && stdout.Len() != 0 || !strings.Contains(stdout.String(), tc.stdoutHas) {
			t.Errorf("%q: stdout %q, want it to hold %q", tc.args, stdout.String(), tc.stdoutHas)
		}
		if tc.stderrHas == "" && stderr.Len() != 0 || !strings.Contains(stderr.String(), tc.stderrHas) {
			t.Errorf("%q: stderr %q, want it to hold %q", tc.args, stderr.String(), tc.stderrHas)
		}
	}
	var top bytes.Buffer
	run([]string{"--help"}, &top, &bytes.Buffer{})
	for _, c := range subcommands {
		if !strings.Contains(top.String(), "\n  "+c.name+" ") {
			t.Errorf("the top-level help does not list %s:\n%s", c.name, top.String())
		}
	}
}

// TestVersionNamesTheRevisionTheBuildStamped builds the command the way
// the README says (with VCS stamping asked for, as GOFLAGS may turn it off)
// and checks --version and version --json against git's HEAD.
func TestVersionNamesTheRevisionTheBuildStamped(t *testing.T) {
	t.Parallel() // it builds and runs a binary of its own
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binary")
	}
	bin := filepath.Join(t.TempDir(), "reactorlab")
	if out, err := exec.Command(goBin, "build", "-buildvcs=auto", "-o", bin, ".").CombinedOutput(); err != nil {
		if strings.Contains(string(out), "error obtaining VCS status") {
			t.Skipf("go build cannot read this checkout's VCS status (an unsafe or broken repository): %s", out)
		}
		t.Fatalf("go build: %v\n%s", err, out)
	}
	line, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	again, err := exec.Command(bin, "version").Output()
	if err != nil || string(again) != string(line) {
		t.Errorf("version: %v, %q differs from --version's %q", err, again, line)
	}
	raw, err := exec.Command(bin, "version", "--json", "-").Output()
	if err != nil {
		t.Fatalf("version --json -: %v", err)
	}
	var v buildVersion
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("version --json - is not one JSON object: %v\n%s", err, raw)
	}
	if v.Module != "github.com/reactorlab/reactorlab" || !strings.HasPrefix(v.Go, "go1.") || v.Version == "" || (v.Revision == "") != (v.Modified == nil) {
		t.Errorf("version --json = %+v", v)
	}
	if !strings.HasPrefix(string(line), "reactorlab "+v.Version+", ") || !strings.Contains(string(line), v.Go) {
		t.Errorf("--version %q does not say the version %q and Go %q", line, v.Version, v.Go)
	}
	head, gitErr := exec.Command("git", "rev-parse", "HEAD").Output()
	if gitErr != nil {
		if v.Revision != "" || !strings.Contains(string(line), "revision unknown") {
			t.Errorf("no git repository here, yet the version says revision %q: %q", v.Revision, line)
		}
		return
	}
	if rev := strings.TrimSpace(string(head)); v.Revision != rev || !strings.Contains(string(line), "revision "+rev) {
		t.Errorf("revision %q (line %q), want git's HEAD %s", v.Revision, line, rev)
	}
}

// run's many flags are listed under headings a reader can scan (what to
// measure, the load, where it runs, the output, the reactor's own), every
// one under a heading: none is left to "other flags".
func TestRunHelpIsGrouped(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run --help: exit %d\n%s", code, stderr.String())
	}
	help := stdout.String()
	at := 0
	for _, h := range []string{"\nwhat to measure:\n", "\nload (the load generator's knobs):\n", "\nwhere it runs:\n", "\noutput:\n", "\nreactor flags (a reference reactor only, as serve takes them):\n"} {
		i := strings.Index(help[at:], h)
		if i < 0 {
			t.Fatalf("run --help lacks heading %q after byte %d:\n%s", h, at, help)
		}
		at += i + len(h)
	}
	if strings.Contains(help, "\nother flags:\n") {
		t.Errorf("run --help leaves flags under no heading:\n%s", help[strings.Index(help, "\nother flags:\n"):])
	}
	for _, name := range []string{"--duration", "--cpus", "--json", "--budget-bytes", "--fault"} {
		if n := strings.Count(help, "\n  "+name+" "); n != 1 {
			t.Errorf("run --help lists %s %d times, want once", name, n)
		}
	}
}
