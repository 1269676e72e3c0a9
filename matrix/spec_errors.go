package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// posError is an error already located at a line and field.
type posError struct {
	line  int
	field string
	err   error
}

func (e *posError) Error() string {
	return fmt.Sprintf("line %d: %s: %v", e.line, e.field, e.err)
}

func (e *posError) Unwrap() []error { return []error{ErrSpec, e.err} }

// Errors is every error found in a spec (or a suite) that has more than
// one, in the order of their lines (those without a line first), each
// wrapping ErrSpec and reading "line N: field: problem". Parse and
// ParseSuite find together every error whose check does not depend on
// another's passing: every unknown or repeated key, every field that
// does not read, every factor's and every value's, every rule of a
// cell's combination of fields on fields whose values are known (read,
// and not perhaps the one a misspelt key meant); the checks that build
// on others (the load generator's and the reactor's validation of a
// cell, the factors measured against the baseline) run only where those
// passed. A YAML syntax error is always the one error.
type Errors []error

// Error is the errors' texts, one per line.
func (e Errors) Error() string {
	texts := make([]string, len(e))
	for i, err := range e {
		texts[i] = err.Error()
	}
	return strings.Join(texts, "\n")
}

// Unwrap returns the errors.
func (e Errors) Unwrap() []error { return e }

// problems collects a spec's errors as they are found.
type problems []error

// add appends err, unless it is nil.
func (p *problems) add(err error) {
	if err != nil {
		*p = append(*p, err)
	}
}

// err is nil for no error, the error alone for one, else an Errors of
// them in the order of their lines.
func (p problems) err() error {
	switch len(p) {
	case 0:
		return nil
	case 1:
		return p[0]
	}
	out := slices.Clone(Errors(p))
	line := func(err error) int {
		var pe *posError
		if errors.As(err, &pe) {
			return pe.line
		}
		return 0
	}
	slices.SortStableFunc(out, func(a, b error) int { return line(a) - line(b) })
	return out
}

// lineErr locates err at n, unless it is already located; an error
// located at a line but no field (a posError whose field is "") is given
// field.
func lineErr(n *yaml.Node, field string, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		if pe.field == "" {
			return &posError{line: pe.line, field: field, err: pe.err}
		}
		return err
	}
	return &posError{line: n.Line, field: field, err: err}
}

var yamlLineRE = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// yamlError puts the line of yaml.v3's "yaml: line N: problem" first, as
// every other error does, counted from 1 as every other error does. A few
// of its errors (bad encoding) have no line: they wrap ErrSpec as they are.
//
// yaml.v3 (v3.0.1, parser.fail in decode.go) names the line of the
// problem's context when it has one (where the mapping, list or quoted
// scalar it was in began), else the line of the problem; counts it from 0,
// adding 1 for its scanner's errors only; and names no line when that
// number is 0. So the error is read from data parsed again behind one
// empty line: every mark is then on a line counted from 1 (from 2 for the
// scanner, less one here), never 0. For an unclosed '{' or '[' that is the
// bracket's line. A block mapping or list broken further down (a key or
// '-' where none fits) names its context, where the mapping or list
// begins; the line where the problem shows is found by parsing data once
// more from the context's line on: the context is then on the stream's
// first line, whose number yaml.v3 does not name, so it names the
// problem's, counted from the context's. Three parses at most, each linear
// in data. TestParseErrors pins every case's line, so a yaml.v3 that
// counts otherwise fails it rather than misreport.
func yamlError(data []byte, err error) error {
	line, problem := yamlLine(err)
	parser := slices.Contains(parserProblems, problem)
	at, again := yamlLine(decodeAll(behindNewline(data)))
	if again != problem {
		// Parsed behind a newline, data fails otherwise (an encoding that
		// one byte more breaks): yaml.v3's own count, as it is.
		if line == 0 {
			return fmt.Errorf("%w: %v", ErrSpec, err)
		}
		if parser {
			line++
		}
		return &posError{line: line, field: "yaml", err: errors.New(problem)}
	}
	if !parser {
		at--
	}
	if at < 1 {
		return fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if slices.Contains(blockProblems, problem) {
		lines := bytes.SplitAfter(data, []byte("\n"))
		if at <= len(lines) {
			if n, p := yamlLine(decodeAll(bytes.Join(lines[at-1:], nil))); p == problem && n > 0 {
				return &posError{line: at + n, field: "yaml", err: fmt.Errorf("%s (in the mapping or list that begins at line %d)", problem, at)}
			}
		}
	}
	return &posError{line: at, field: "yaml", err: errors.New(problem)}
}

// yamlLine splits a yaml.v3 error into the line it names (0: none) and
// its problem, without "yaml: "; nil is 0, "".
func yamlLine(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, strings.TrimPrefix(err.Error(), "yaml: ")
}

// behindNewline is data with an empty line before it (after its UTF-8
// byte order mark, if it has one).
func behindNewline(data []byte) []byte {
	bom := []byte("\xef\xbb\xbf")
	if bytes.HasPrefix(data, bom) {
		return slices.Concat(bom, []byte("\n"), data[len(bom):])
	}
	return slices.Concat([]byte("\n"), data)
}

// blockProblems are the parser's problems whose context is a block
// mapping or list that began before the line where the problem shows.
var blockProblems = []string{
	"did not find expected key",
	"did not find expected '-' indicator",
}

// parserProblems are the problems yaml.v3's parser (not its scanner)
// reports, whose line it counts from 0.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// decodeAll decodes every document of data and returns the first error.
func decodeAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
