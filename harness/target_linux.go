//go:build linux

package harness

import (
	"os/exec"
	"strings"

	"github.com/reactorlab/reactorlab/target"
)

// ShellArgv is how a black-box command runs: /bin/sh -c COMMAND, with
// "exec " put before a simple command (no shell operator, redirection,
// substitution, quoting, glob or leading assignment; the harness's {addr}
// placeholders are plain words to the shell) so that the server replaces the shell. The
// process the harness measures, and whose rusage it reads at the reap, is
// then the server itself: a shell that forks it and is killed by SIGTERM
// never waits for it, and its CPU would be lost (measured: 0.00 s for a
// gnet peer that served 25k frames/s). A compound command keeps the shell
// in between; write "exec" before its server yourself for CPU figures.
func ShellArgv(command string) []string {
	words := strings.Fields(command)
	if len(words) == 0 || strings.ContainsAny(command, ";&|<>()$`\\\"'\n*?[]~#") || strings.Contains(words[0], "=") || words[0] == "exec" {
		return []string{"/bin/sh", "-c", command}
	}
	return []string{"/bin/sh", "-c", "exec " + command}
}

// CheckCommand refuses, before anything starts, a black-box command the
// shell would exec (a simple command, see ShellArgv) whose program is not
// an executable file, found as given (a path) or on $PATH: the error is a
// *target.StartError with Cause StartMissing, naming the program. A compound
// command is left to the shell, whose exit status 127 or 126 a run
// reports as the same cause.
func CheckCommand(command string) error {
	if argv := ShellArgv(command); argv[len(argv)-1] == command {
		return nil // compound, or exec written by the user: the shell's
	}
	prog := strings.Fields(command)[0]
	if _, err := exec.LookPath(prog); err != nil {
		return &target.StartError{Cause: target.StartMissing, Detail: err.Error(), Code: -1}
	}
	return nil
}
