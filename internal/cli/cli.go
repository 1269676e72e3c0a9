// Package cli holds the conventions every reactorlab subcommand shares, on
// top of the standard flag package: the layout of its help (a synopsis
// line, one paragraph of description, the flags), where help and usage
// errors go (help on stdout, exit 0; a usage error on stderr as one line
// plus one line pointing to --help, exit ExitUsage), flags parsed wherever
// they stand among positional arguments, and usage errors that say what a
// value should have looked like.
//
// Exit codes mean one thing across every subcommand: ExitOK, ExitFail,
// ExitUsage and ExitInterrupted.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// The exit codes of every reactorlab subcommand.
const (
	// ExitOK: the command did what it was asked and found nothing wrong.
	ExitOK = 0
	// ExitFail: the command ran and found something wrong (a case failed,
	// a run was invalid, a regression), or could not finish its work.
	ExitFail = 1
	// ExitUsage: the command refused to start: bad flags or arguments, or
	// a target that could not be started; nothing was run.
	ExitUsage = 2
	// ExitInterrupted: SIGINT or SIGTERM stopped the command before the
	// end; what was done is reported, and nothing is judged by it.
	ExitInterrupted = 130
)

// Command describes one subcommand: the text of its help and its flags.
// Name is the full command name ("reactorlab run"); Synopsis is one or
// more lines of the form "reactorlab run [flags]" (no "usage:" prefix);
// Description is one paragraph, wrapped by its author.
type Command struct {
	Name        string
	Synopsis    string
	Description string
	Flags       *flag.FlagSet
	// Groups, when set, are the headings help lists the flags under, in
	// their order (each group's flags sorted by name); a flag in no group
	// is listed last, under "other flags".
	Groups []FlagGroup
}

// FlagGroup is a heading of a command's help and the names of the flags
// listed under it.
type FlagGroup struct {
	Title string
	Names []string
}

// New returns a Command with an empty flag set named name. The flag set
// writes nothing by itself: Parse reports its errors.
func New(name, synopsis, description string) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{Name: name, Synopsis: synopsis, Description: description, Flags: fs}
}

// WriteHelp writes the command's help: "usage:" and the synopsis, the
// description, and every flag with its value's name, its default and its
// text, under "flags:" or, when the command has Groups, under their
// headings.
func (c *Command) WriteHelp(w io.Writer) {
	lines := strings.Split(strings.TrimSpace(c.Synopsis), "\n")
	for i, l := range lines {
		prefix := "usage: "
		if i > 0 {
			prefix = "       "
		}
		fmt.Fprintf(w, "%s%s\n", prefix, strings.TrimSpace(l))
	}
	if d := strings.TrimSpace(c.Description); d != "" {
		fmt.Fprintf(w, "\n%s\n", d)
	}
	n := 0
	c.Flags.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	if len(c.Groups) == 0 {
		fmt.Fprintf(w, "\nflags:\n")
		c.Flags.VisitAll(func(f *flag.Flag) { writeFlag(w, f) })
		return
	}
	grouped := map[string]bool{}
	for _, g := range c.Groups {
		fmt.Fprintf(w, "\n%s:\n", g.Title)
		in := map[string]bool{}
		for _, name := range g.Names {
			in[name] = true
		}
		c.Flags.VisitAll(func(f *flag.Flag) {
			if in[f.Name] && !grouped[f.Name] {
				grouped[f.Name] = true
				writeFlag(w, f)
			}
		})
	}
	heading := false
	c.Flags.VisitAll(func(f *flag.Flag) {
		if grouped[f.Name] {
			return
		}
		if !heading {
			fmt.Fprintf(w, "\nother flags:\n")
			heading = true
		}
		writeFlag(w, f)
	})
}

// writeFlag writes one flag of a command's help: its name and value's
// name, then its text and default, indented.
func writeFlag(w io.Writer, f *flag.Flag) {
	value, usage := flag.UnquoteUsage(f)
	head := "  --" + f.Name
	if value != "" {
		head += " " + value
	}
	if def := defaultText(f); def != "" {
		usage += " (default " + def + ")"
	}
	fmt.Fprintln(w, head)
	for _, l := range wrap(usage, 72) {
		fmt.Fprintf(w, "        %s\n", l)
	}
}

// defaultText is f's default as help shows it, or "" for a zero default.
func defaultText(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}

// wrap splits text into lines of at most width columns, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Parse parses args with the command's flags, flags and positional
// arguments in any order ("--" ends the flags), and returns the positional
// arguments. done reports that the command must return code at once: after
// -h/--help, with the help on stdout and ExitOK; after a bad flag, with
// the error and a pointer to --help on stderr and ExitUsage.
func (c *Command) Parse(args []string, stdout, stderr io.Writer) (pos []string, done bool, code int) {
	pos, err := parseInterspersed(c.Flags, args)
	if err == nil {
		return pos, false, ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		c.WriteHelp(stdout)
		return nil, true, ExitOK
	}
	return nil, true, c.Usagef(stderr, "%s", c.explain(err))
}

// ParseNoArgs is Parse for a command that takes flags only: a positional
// argument is a usage error; for a command with a --target flag, with a
// hint to quote a cmd: target's command (its words are the likeliest
// stray arguments).
func (c *Command) ParseNoArgs(args []string, stdout, stderr io.Writer) (done bool, code int) {
	pos, done, code := c.Parse(args, stdout, stderr)
	if done {
		return done, code
	}
	if len(pos) > 0 {
		hint := "the command takes flags only"
		if c.Flags.Lookup("target") != nil {
			hint = "flags only; quote a cmd: target's command as one argument"
		}
		return true, c.Usagef(stderr, "unexpected argument %q (%s)", pos[0], hint)
	}
	return false, ExitOK
}

// Usagef writes a usage error: "NAME: MESSAGE" and one line pointing to
// --help, on w; it returns ExitUsage.
func (c *Command) Usagef(w io.Writer, format string, a ...any) int {
	fmt.Fprintf(w, "%s: %s\n", c.Name, fmt.Sprintf(format, a...))
	fmt.Fprintf(w, "Run '%s --help' for usage.\n", c.Name)
	return ExitUsage
}

// Errorf writes "NAME: MESSAGE" on w and returns code: an error found
// after the flags were accepted.
func (c *Command) Errorf(w io.Writer, code int, format string, a ...any) int {
	fmt.Fprintf(w, "%s: %s\n", c.Name, fmt.Sprintf(format, a...))
	return code
}

// flagValueError matches the flag package's error for a value its type
// rejects.
var flagValueError = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)

// explain rewrites the flag package's errors in the command's terms: a
// flag named with two dashes, and for a duration the form it wants.
func (c *Command) explain(err error) string {
	msg := err.Error()
	m := flagValueError.FindStringSubmatch(msg)
	if m == nil {
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			return fmt.Sprintf("unknown flag --%s", name)
		}
		if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
			return fmt.Sprintf("--%s needs a value", name)
		}
		return msg
	}
	value, name, why := m[1], m[2], m[3]
	if f := c.Flags.Lookup(name); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case time.Duration:
				return fmt.Sprintf("--%s %q: not a duration (want a number with a unit: 500ms, 3s, 2m)", name, value)
			case int, int64, uint, uint64:
				return fmt.Sprintf("--%s %q: not a whole number", name, value)
			case float64:
				return fmt.Sprintf("--%s %q: not a number", name, value)
			case bool:
				return fmt.Sprintf("--%s=%s: want true or false", name, value)
			}
		}
	}
	return fmt.Sprintf("--%s %q: %s", name, value, why)
}

// parseInterspersed parses fs's flags wherever they stand among args
// ("compare OLD NEW --threshold 5%" as well as "compare --threshold 5% OLD
// NEW") and returns the positional arguments in order; "--" ends the
// flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Set reports which flags args set on the command line (after Parse).
func (c *Command) Set() map[string]bool {
	set := map[string]bool{}
	c.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// StdoutPath is the path that names standard output in a flag that takes
// a file ("--json -").
const StdoutPath = "-"

// HumanOut is where the text a person reads goes when a command's machine
// output goes to path: stderr when path is StdoutPath (stdout then holds
// only the machine output), else stdout.
func HumanOut(path string, stdout, stderr io.Writer) io.Writer {
	if path == StdoutPath {
		return stderr
	}
	return stdout
}

// WriteTo writes to path with write, or to stdout when path is "-"; a file
// is created (or truncated) and closed, its error named with the path.
func WriteTo(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == StdoutPath {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
