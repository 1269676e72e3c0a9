package proc

import (
	"fmt"
	"strings"
	"time"
)

// StderrLines is how many lines of a process's stderr a StartReport shows:
// the end of it, where a program that fails says why.
const StderrLines = 20

// StartReport is what a message about a failed start says, in the facts
// every starter has (this package's StartError, the conformance suite's
// and the harness's): what was started, why it did not start, and what it
// printed. String is the one wording of a failed start, so that every
// command that starts a target words it the same way.
type StartReport struct {
	// Target names what was started as its user named it
	// ("cmd:./server --listen {addr}", "lt"); "" is "the server".
	Target string
	// Cause is why it did not start: StartMissing, StartExited or
	// StartNoListener. Any other value is a start that failed for another
	// reason, which Note gives.
	Cause StartCause
	// Exit is how the process ended ("exit status 127"), for StartMissing
	// and StartExited. With StartMissing, "" says the program was found
	// missing before anything ran (no process, no stderr).
	Exit string
	// Addrs are the addresses it was to accept connections on, in order.
	Addrs []string
	// Timeout is how long they were waited for (StartNoListener).
	Timeout time.Duration
	// Note is what the cause does not say: why a program was found missing
	// before it ran, from where the addresses were dialled, or the error
	// of a start that failed for another cause; "" for none.
	Note string
	// StderrTail is the end of the process's stderr ("" when it wrote
	// nothing there); String shows its last StderrLines lines.
	StderrTail string
}

// String is one line naming the target and the cause ("cmd:true: exited
// (exit status 0) before it listened on 127.0.0.1:4000"), then "; " and
// the note, if any, then, when a process ran, "; it wrote nothing on
// stderr" or "; its stderr ends:" and the tail's last StderrLines lines,
// each on a line of its own, indented by four spaces. For a cause that is
// none of the three it is "TARGET: did not start" and ": " and the note.
func (r StartReport) String() string {
	target := r.Target
	if target == "" {
		target = "the server"
	}
	ran := true
	var msg string
	switch r.Cause {
	case StartMissing:
		if r.Exit != "" {
			msg = fmt.Sprintf("%s: the program could not be run (%s: not found, or not executable)", target, r.Exit)
		} else {
			msg = fmt.Sprintf("%s: the program could not be run (not found, or not executable)", target)
			ran = false
		}
	case StartExited:
		exit := r.Exit
		if exit == "" {
			exit = "status unknown"
		}
		msg = fmt.Sprintf("%s: exited (%s) before it listened on %s", target, exit, addrsText(r.Addrs))
	case StartNoListener:
		within := "in time"
		if r.Timeout > 0 {
			within = fmt.Sprintf("within %v", r.Timeout)
		}
		msg = fmt.Sprintf("%s: nothing accepted connections on %s %s (the program was running; it has been killed)", target, addrsText(r.Addrs), within)
	default:
		msg = target + ": did not start"
		if r.Note != "" {
			msg += ": " + r.Note
		}
		return msg
	}
	if r.Note != "" {
		msg += "; " + r.Note
	}
	if !ran {
		return msg
	}
	tail := LastLines(r.StderrTail, StderrLines)
	if tail == "" {
		return msg + "; it wrote nothing on stderr"
	}
	return msg + "; its stderr ends:\n    " + strings.ReplaceAll(tail, "\n", "\n    ")
}

// Hint is the advice a command adds on a line of its own after a refusal
// of r: for StartNoListener, that a program which compiles or loads first
// may need more time, given by the command's flag (flag, "--start-timeout");
// "" for any other cause, where more time would not help.
func (r StartReport) Hint(flag string) string {
	if r.Cause != StartNoListener {
		return ""
	}
	return "A program that compiles or loads first (go run, a JIT) may need a longer " + flag + "."
}

// addrsText is the addresses joined by " and ", or "its address" when
// there are none.
func addrsText(addrs []string) string {
	if len(addrs) == 0 {
		return "its address"
	}
	return strings.Join(addrs, " and ")
}

// LastLines is the last n lines of s, trimmed of surrounding white space;
// "" when s is blank.
func LastLines(s string, n int) string {
	s = strings.TrimSpace(s)
	if s == "" || n <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// Report is e as a StartReport of target, whose addresses were waited for
// timeout: its cause, its exit (for StartMissing and StartExited), its
// addresses and the end of its stderr; when it has none of the three
// causes (Start's context ended), the note is Err.
func (e *StartError) Report(target string, timeout time.Duration) StartReport {
	r := StartReport{Target: target, Cause: e.Cause(), Addrs: e.Addrs, Timeout: timeout,
		StderrTail: LastLines(e.Exit.StderrTail, StderrLines)}
	switch r.Cause {
	case StartMissing, StartExited:
		r.Exit = e.Exit.String()
	case StartNoListener:
	default:
		r.Note = e.Err.Error()
	}
	return r
}
