package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func newTestCommand() (*Command, *time.Duration, *int, *string) {
	c := New("reactorlab try", "reactorlab try [flags] ARG...", "Tries things. Exit 0 always.")
	d := c.Flags.Duration("duration", 10*time.Second, "measured time")
	n := c.Flags.Int("hot", 1, "hot sources")
	s := c.Flags.String("out", "", "a `DIR` for the files")
	c.Flags.Bool("json", false, "print JSON")
	return c, d, n, s
}

func TestHelpGoesToStdout(t *testing.T) {
	c, _, _, _ := newTestCommand()
	var stdout, stderr bytes.Buffer
	_, done, code := c.Parse([]string{"--help"}, &stdout, &stderr)
	if !done || code != ExitOK {
		t.Fatalf("--help: done %v code %d, want done with %d", done, code, ExitOK)
	}
	if stderr.Len() != 0 {
		t.Errorf("--help wrote to stderr: %q", stderr.String())
	}
	help := stdout.String()
	for _, want := range []string{"usage: reactorlab try [flags] ARG...\n", "\nTries things. Exit 0 always.\n", "\nflags:\n",
		"  --duration duration\n", "(default 10s)", "  --out DIR\n", "  --json\n"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	// A default is shown when it is not the zero value, and only then.
	if !strings.Contains(help, "  --hot int\n        hot sources (default 1)\n") || !strings.Contains(help, "  --out DIR\n        a DIR for the files\n") {
		t.Errorf("defaults shown wrongly:\n%s", help)
	}
}

func TestUsageErrorIsOneLineAndAPointer(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "3"}, `reactorlab try: --duration "3": not a duration (want a number with a unit: 500ms, 3s, 2m)`},
		{[]string{"--hot", "many"}, `reactorlab try: --hot "many": not a whole number`},
		{[]string{"--json=maybe"}, `reactorlab try: --json=maybe: want true or false`},
		{[]string{"--nope"}, `reactorlab try: unknown flag --nope`},
		{[]string{"x", "--out"}, `reactorlab try: --out needs a value`},
	} {
		c, _, _, _ := newTestCommand()
		var stdout, stderr bytes.Buffer
		_, done, code := c.Parse(tc.args, &stdout, &stderr)
		if !done || code != ExitUsage {
			t.Errorf("%q: done %v code %d, want done with %d", tc.args, done, code, ExitUsage)
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: wrote to stdout: %q", tc.args, stdout.String())
		}
		want := tc.want + "\nRun 'reactorlab try --help' for usage.\n"
		if stderr.String() != want {
			t.Errorf("%q: stderr\n%q\nwant\n%q", tc.args, stderr.String(), want)
		}
	}
}

func TestFlagsAmongArguments(t *testing.T) {
	c, d, n, s := newTestCommand()
	var stdout, stderr bytes.Buffer
	pos, done, _ := c.Parse([]string{"a", "--hot", "3", "b", "--duration=2s", "--", "--out", "c"}, &stdout, &stderr)
	if done {
		t.Fatalf("done early: %s", stderr.String())
	}
	if strings.Join(pos, " ") != "a b --out c" || *n != 3 || *d != 2*time.Second || *s != "" {
		t.Errorf("pos %q hot %d duration %v out %q", pos, *n, *d, *s)
	}
	if set := c.Set(); !set["hot"] || !set["duration"] || set["out"] {
		t.Errorf("Set() = %v", set)
	}
}

func TestParseNoArgsRefusesArguments(t *testing.T) {
	c, _, _, _ := newTestCommand()
	var stdout, stderr bytes.Buffer
	done, code := c.ParseNoArgs([]string{"--hot", "2", "./server"}, &stdout, &stderr)
	if !done || code != ExitUsage || !strings.HasPrefix(stderr.String(), `reactorlab try: unexpected argument "./server" (the command takes flags only)`) {
		t.Errorf("done %v code %d stderr %q", done, code, stderr.String())
	}
	c.Flags.String("target", "", "what to test")
	stderr.Reset()
	done, code = c.ParseNoArgs([]string{"--target", "cmd:./server", "9000"}, &stdout, &stderr)
	if !done || code != ExitUsage || !strings.Contains(stderr.String(), `unexpected argument "9000" (flags only; quote a cmd: target's command as one argument)`) {
		t.Errorf("with --target: done %v code %d stderr %q", done, code, stderr.String())
	}
}

// A command with groups lists its flags under their headings, in the
// groups' order, each flag once; a flag in no group comes last, under
// "other flags".
func TestHelpGroupsFlags(t *testing.T) {
	c, _, _, _ := newTestCommand()
	c.Groups = []FlagGroup{{Title: "output", Names: []string{"out", "json"}}, {Title: "load", Names: []string{"hot", "out"}}}
	var stdout, stderr bytes.Buffer
	if _, done, code := c.Parse([]string{"--help"}, &stdout, &stderr); !done || code != ExitOK {
		t.Fatalf("--help: done %v code %d", done, code)
	}
	help := stdout.String()
	order := []string{"\noutput:\n  --json\n", "  --out DIR\n", "\nload:\n  --hot int\n", "\nother flags:\n  --duration duration\n"}
	at := 0
	for _, want := range order {
		i := strings.Index(help[at:], want)
		if i < 0 {
			t.Fatalf("help lacks %q after byte %d:\n%s", want, at, help)
		}
		at += i + len(want)
	}
	if strings.Contains(help, "\nflags:\n") || strings.Count(help, "  --out DIR\n") != 1 {
		t.Errorf("a grouped help lists a flag twice, or under flags:\n%s", help)
	}
}
