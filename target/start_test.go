package target

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// StartError words each cause one way: the target and the cause on the
// first line, the detail, then the stderr (its last StderrLines lines,
// indented) or that there was none, except where nothing ran, and the
// stdout's end when there was any. Only a target that listened nowhere
// gets the hint to wait longer.
func TestStartErrorWords(t *testing.T) {
	var long []string
	for i := 1; i <= 30; i++ {
		long = append(long, fmt.Sprintf("line %d", i))
	}
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	for _, tc := range []struct {
		r    StartError
		want string
	}{
		{StartError{Target: "cmd:./srv", Cause: StartMissing, Exit: "exit status 127", StderrTail: "sh: ./srv: not found\n"},
			"cmd:./srv: the program could not be run (exit status 127: not found, or not executable); its stderr ends:\n    sh: ./srv: not found"},
		{StartError{Target: "cmd:./srv", Cause: StartMissing, Detail: `exec: "./srv": no such file`},
			`cmd:./srv: the program could not be run (not found, or not executable); exec: "./srv": no such file`},
		{StartError{Target: "lt", Cause: StartExited, Exit: "exit status 2", Addrs: addrs},
			"lt: exited (exit status 2) before it listened on 127.0.0.1:1 and 127.0.0.1:2; it wrote nothing on stderr"},
		{StartError{Cause: StartNoListener, Addrs: addrs[:1], Timeout: 2 * time.Second, StderrTail: "a\nb"},
			"the server: nothing accepted connections on 127.0.0.1:1 within 2s (the program was running; it has been killed); its stderr ends:\n    a\n    b"},
		{StartError{Target: "x", Cause: StartNoListener, Addrs: addrs[:1], Timeout: time.Second, Detail: "dialled from elsewhere"},
			"x: nothing accepted connections on 127.0.0.1:1 within 1s (the program was running; it has been killed); dialled from elsewhere; it wrote nothing on stderr"},
		{StartError{Target: "lt", Cause: "failed", Detail: "budget-input = 0"}, "lt: did not start: budget-input = 0"},
		{StartError{Target: "cmd:./srv --port 7071", Cause: StartElsewhere, Addrs: addrs[:1], Listening: []string{"127.0.0.1:7071"}, Timeout: time.Second, StdoutTail: "listening on 7071\n"},
			"cmd:./srv --port 7071: it listens on 127.0.0.1:7071, not on the address it was given (127.0.0.1:1): pass it {addr} or read REACTORLAB_LISTEN (it was running; it has been killed); it wrote nothing on stderr; its stdout ends:\n    listening on 7071"},
		{StartError{Target: "x", Cause: StartExited, Exit: "exit status 1", Addrs: addrs[:1], StderrTail: "e1\ne2", StdoutTail: "o1\no2"},
			"x: exited (exit status 1) before it listened on 127.0.0.1:1; its stderr ends:\n    e1\n    e2\n  its stdout ends:\n    o1\n    o2"},
		{StartError{Target: "t", Cause: StartExited, Exit: "exit status 1", Addrs: addrs[:1], StderrTail: strings.Join(long, "\n")},
			"t: exited (exit status 1) before it listened on 127.0.0.1:1; its stderr ends:\n    " + strings.Join(long[10:], "\n    ")},
	} {
		if got := tc.r.Error(); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.r, got, tc.want)
		}
	}
	if h := (&StartError{Cause: StartNoListener}).Hint("--start-timeout"); !strings.HasSuffix(h, "may need a longer --start-timeout.") {
		t.Errorf("no-listener hint %q", h)
	}
	if h := (&StartError{Cause: StartExited}).Hint("--start-timeout"); h != "" {
		t.Errorf("a program that exited has a hint: %q", h)
	}
	if h := (&StartError{Cause: StartElsewhere}).Hint("--start-timeout"); h != "" {
		t.Errorf("a program that listened elsewhere has a hint to wait longer: %q", h)
	}
	if got := LastLines("\n a\nb\nc \n\n", 2); got != "b\nc" {
		t.Errorf("LastLines = %q", got)
	}
}
