package target

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
)

// StartCause says why a target could not be started.
type StartCause string

// The causes of a StartError. The first five are a process's, classified
// by the launcher (harness/proc, StartError.Cause there) from how it
// ended, what held its address or where it listened; StartFailed is any
// other failure to start.
const (
	// StartMissing: the program is not there or cannot be executed: it
	// exited with status 127 or 126, as a shell does for a command not
	// found or not executable (and as the launcher does when it cannot
	// exec the program), or it was found missing before it was started.
	StartMissing StartCause = "missing program"
	// StartExited: it ran, and exited before every address it must serve
	// accepted a connection.
	StartExited StartCause = "exited before listening"
	// StartNoListener: it ran, but an address did not accept within the
	// start's bound, and it was seen listening nowhere else; it has been
	// killed.
	StartNoListener StartCause = "no listener"
	// StartElsewhere: it ran, and an address did not accept within the
	// start's bound while its processes held listening sockets on other
	// addresses (Listening): it listens, but not where it was told (a
	// port of its own, not {addr} or REACTORLAB_LISTEN). It has been
	// killed.
	StartElsewhere StartCause = "listening elsewhere"
	// StartAddrTaken: it ran, but an address it was to serve accepted on
	// a listener held by another process, not by any of its own: the
	// port was taken before it could bind it, the environment's doing,
	// not the target's. It has been killed.
	StartAddrTaken StartCause = "address taken"
	// StartFailed: the start failed another way, which Detail gives (an
	// in-process reactor refusing its configuration, no free port).
	StartFailed StartCause = "failed"
)

// StderrLines is how many lines of a target's stderr a StartError's text
// shows: the end of it, where a program that fails says why.
const StderrLines = 20

// StdoutLines is how many lines of a target's stdout a StartError's text
// shows: the end of it, where a server may have said where it listens.
const StdoutLines = 10

// StartError is why a target could not be started: nothing was served, and
// a process that had been started has been killed and reaped. It is the
// one start failure of every reactorlab command and package (the
// conformance suite's StartInstance, the harness's runs, footprint), so
// that each words a failed start the same way (Error) and a caller tells
// the causes apart with errors.As and Cause.
//
// Its JSON (a run's lab record and summary.json: "start_failure") holds
// every field but Err, with Timeout in seconds ("timeout_s", left out
// when 0); what was written before reads back the same.
type StartError struct {
	// Cause is why it did not start; any value but the six is read as
	// StartFailed.
	Cause StartCause `json:"cause"`
	// Target names what was started as its user named it (Spec.String:
	// "cmd:./server --listen {addr}", "lt"); "" is "the server".
	Target string `json:"target,omitempty"`
	// Exit is how the process ended ("exit status 127"), for StartMissing
	// and StartExited; with StartMissing, "" says the program was found
	// missing before anything ran (no process, no stderr).
	Exit string `json:"exit,omitempty"`
	// Addrs are the addresses it was to accept connections on, in order;
	// nil for a target without a process.
	Addrs []string `json:"addrs,omitempty"`
	// Listening are the addresses its processes listened on instead of
	// Addrs, for StartElsewhere; nil otherwise.
	Listening []string `json:"listening,omitempty"`
	// Timeout is how long the addresses were waited for; the text shows
	// it for StartNoListener.
	Timeout time.Duration `json:"-"`
	// Detail is what the cause does not say, "" for nothing: why a
	// program was found missing before it ran, from where the addresses
	// were dialled, or, for StartFailed, the error. It never holds the
	// stderr.
	Detail string `json:"detail,omitempty"`
	// Code is the process's exit code when it exited (StartMissing,
	// StartExited), -1 when a signal ended it or it did not exit.
	Code int `json:"code"`
	// StderrTail is the end of the process's stderr, trimmed of
	// surrounding space; "" when it wrote nothing there or had no process.
	StderrTail string `json:"stderr_tail,omitempty"`
	// StdoutTail is the end of the process's stdout, trimmed of
	// surrounding space; "" when it wrote nothing there or had no process.
	StdoutTail string `json:"stdout_tail,omitempty"`
	// Err is the error the start failed with, where one was seen (a
	// conformance target's Start); nil otherwise, and after JSON.
	Err error `json:"-"`
}

// Error is one line naming the target and the cause ("cmd:true: exited
// (exit status 0) before it listened on 127.0.0.1:4000"), then "; " and
// the detail, if any, then, when a process ran, "; it wrote nothing on
// stderr" or "; its stderr ends:" and the tail's last StderrLines lines,
// each on a line of its own, indented by four spaces, and, when it wrote
// on stdout, "its stdout ends:" (after "; " on the first line, or on a
// line of its own indented by two spaces after the stderr's lines) and
// the stdout tail's last StdoutLines lines, indented the same. For
// StartFailed (or any other cause) it is "TARGET: did not start" and ": "
// and the detail.
func (e *StartError) Error() string {
	target := e.Target
	if target == "" {
		target = "the server"
	}
	ran := true
	var msg string
	switch e.Cause {
	case StartMissing:
		if e.Exit != "" {
			msg = fmt.Sprintf("%s: the program could not be run (%s: not found, or not executable)", target, e.Exit)
		} else {
			msg = fmt.Sprintf("%s: the program could not be run (not found, or not executable)", target)
			ran = false
		}
	case StartExited:
		exit := e.Exit
		if exit == "" {
			exit = "status unknown"
		}
		msg = fmt.Sprintf("%s: exited (%s) before it listened on %s", target, exit, addrsText(e.Addrs))
	case StartNoListener:
		within := "in time"
		if e.Timeout > 0 {
			within = fmt.Sprintf("within %v", e.Timeout)
		}
		msg = fmt.Sprintf("%s: nothing accepted connections on %s %s (the program was running; it has been killed)", target, addrsText(e.Addrs), within)
	case StartElsewhere:
		given := "the address it was given"
		if len(e.Addrs) > 1 {
			given = "the addresses it was given"
		}
		msg = fmt.Sprintf("%s: it listens on %s, not on %s (%s): pass it {addr} or read REACTORLAB_LISTEN (it was running; it has been killed)",
			target, strings.Join(e.Listening, " and "), given, addrsText(e.Addrs))
	case StartAddrTaken:
		msg = fmt.Sprintf("%s: another process held %s, so the program could not serve it (it was running; it has been killed)", target, addrsText(e.Addrs))
	default:
		msg = target + ": did not start"
		if e.Detail != "" {
			msg += ": " + e.Detail
		}
		return msg
	}
	if e.Detail != "" {
		msg += "; " + e.Detail
	}
	if !ran {
		return msg
	}
	tail := LastLines(e.StderrTail, StderrLines)
	if tail == "" {
		msg += "; it wrote nothing on stderr"
	} else {
		msg += "; its stderr ends:\n    " + strings.ReplaceAll(tail, "\n", "\n    ")
	}
	out := LastLines(e.StdoutTail, StdoutLines)
	switch {
	case out == "":
		return msg
	case tail == "":
		msg += "; "
	default:
		msg += "\n  "
	}
	return msg + "its stdout ends:\n    " + strings.ReplaceAll(out, "\n", "\n    ")
}

// Unwrap returns Err.
func (e *StartError) Unwrap() error { return e.Err }

// Hint is the advice a command adds on a line of its own after refusing
// a target that could not be started: for StartNoListener (it ran, and
// listened nowhere), that a program which compiles or loads first may
// need more time, given by the command's flag (flag, "--start-timeout");
// "" for any other cause, where more time would not help (StartElsewhere:
// it listened, on another address).
func (e *StartError) Hint(flag string) string {
	if e.Cause != StartNoListener {
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
// "" when s is blank or n is not positive.
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

// startErrorJSON is StartError's JSON: its fields, then the timeout in
// seconds.
type startErrorJSON struct {
	*plainStartError
	Timeout jsontime.Seconds `json:"timeout_s,omitempty"`
}

type plainStartError StartError

// MarshalJSON writes the failure with its timeout in seconds
// ("timeout_s").
func (e StartError) MarshalJSON() ([]byte, error) {
	p := plainStartError(e)
	return json.Marshal(startErrorJSON{plainStartError: &p, Timeout: jsontime.Seconds(e.Timeout)})
}

// UnmarshalJSON reads what MarshalJSON writes; Err stays nil.
func (e *StartError) UnmarshalJSON(b []byte) error {
	v := startErrorJSON{plainStartError: (*plainStartError)(e)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	e.Timeout = time.Duration(v.Timeout)
	return nil
}
