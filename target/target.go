// Package target is what a reactorlab command or spec serves, written once:
// its textual form (a reference design's name, or a black-box server
// command written cmd:COMMAND), and why it could not be started
// (StartError, with its causes and its one wording).
//
// The package imports nothing of the module, so that the launcher
// (harness/proc), which classifies a failed start, can use it. The
// registry of designs (reactors/designs) sits far above that, so Parse is
// given the accepted design names by its caller rather than importing
// them.
package target

import (
	"fmt"
	"strings"
)

// CommandPrefix starts the textual form of a black-box server command:
// cmd:COMMAND.
const CommandPrefix = "cmd:"

// commandForm is how errors and help texts name the command form.
const commandForm = CommandPrefix + "'COMMAND'"

// Spec is one target: a reference design, named, or a black-box server
// command, run by /bin/sh -c. At most one of the two is set; the zero Spec
// is no target. Spec is comparable, and two Specs are equal exactly when
// they name the same target.
type Spec struct {
	design, command string
}

// Design is the target that is the reference design named name (a
// string, or the registry's own name type, reactors.DesignName); "" is no
// target. It does not check the name against the registry: Parse does.
func Design[D ~string](name D) Spec { return Spec{design: string(name)} }

// Command is the target that is the black-box server command, as its user
// wrote it (a shell command line, not an argv); "" is no target.
func Command(command string) Spec { return Spec{command: command} }

// Design is the reference design's name; "" for a command or no target.
func (s Spec) Design() string { return s.design }

// Command is the black-box server's command line; "" for a design or no
// target.
func (s Spec) Command() string { return s.command }

// IsCommand says whether s is a black-box server command.
func (s Spec) IsCommand() bool { return s.command != "" }

// IsDesign says whether s is a reference design.
func (s Spec) IsDesign() bool { return s.design != "" }

// IsZero says whether s is no target.
func (s Spec) IsZero() bool { return s == Spec{} }

// String is the target as its user names it, the form Parse reads back:
// the design's name ("lt"), or CommandPrefix and the command
// ("cmd:./server --port {addr}"); "" for no target.
func (s Spec) String() string {
	if s.command != "" {
		return CommandPrefix + s.command
	}
	return s.design
}

// Parse reads a target in its textual form: one of designs (the names the
// registry accepts, reactors/designs.Names), or CommandPrefix followed by
// a command that is not blank, kept as written. The error names the bad
// input and lists what is accepted; it never panics.
func Parse[D ~string](s string, designs []D) (Spec, error) {
	if command, ok := strings.CutPrefix(s, CommandPrefix); ok {
		if strings.TrimSpace(command) == "" {
			return Spec{}, fmt.Errorf("%q needs a command after %s (e.g. %s'./server --port {addr}')", s, CommandPrefix, CommandPrefix)
		}
		return Command(command), nil
	}
	if s == "" {
		return Spec{}, fmt.Errorf("no target (accepted: %s)", Accepted(designs))
	}
	for _, d := range designs {
		if string(d) == s {
			return Design(s), nil
		}
	}
	return Spec{}, fmt.Errorf("unknown target %q (accepted: %s)", s, Accepted(designs))
}

// Accepted lists what Parse accepts, for errors and help texts: the
// designs, comma-separated, then cmd:'COMMAND'.
func Accepted[D ~string](designs []D) string {
	var b strings.Builder
	for _, d := range designs {
		b.WriteString(string(d))
		b.WriteString(", ")
	}
	b.WriteString(commandForm)
	return b.String()
}
