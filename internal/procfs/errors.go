package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Self, as a pid, names the calling process: the readers read
// /proc/self, which is this process in whichever PID namespace /proc was
// mounted for (a process that has just entered a new PID namespace and not
// yet mounted its /proc is not named by its own pid there).
const Self = 0

// Dir is the /proc directory of process pid ("/proc/self" for Self).
func Dir(pid int) string {
	if pid == Self {
		return "/proc/self"
	}
	return "/proc/" + strconv.Itoa(pid)
}

// TaskDir is the /proc directory of thread tid of process pid.
func TaskDir(pid, tid int) string {
	return Dir(pid) + "/task/" + strconv.Itoa(tid)
}

// FormatError is a kernel file that a parser could not read: File is the
// file, as proc(5) names it ("stat", "status") when the parser was given
// bytes and the path when a reader read it; Field names the field or line
// (with its number where proc(5) numbers them); Err says what was wrong.
type FormatError struct {
	File, Field string
	Err         error
}

func (e *FormatError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Err.Error()
	}
	return e.File + ": " + e.Field + ": " + e.Err.Error()
}

func (e *FormatError) Unwrap() error { return e.Err }

// bad is a FormatError of file at field.
func bad(file, field string, format string, a ...any) error {
	return &FormatError{File: file, Field: field, Err: fmt.Errorf(format, a...)}
}

// badValue is a FormatError of file at field for a value that did not
// parse (err is strconv's).
func badValue(file, field string, err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		err = fmt.Errorf("%q: %w", ne.Num, ne.Err)
	}
	return &FormatError{File: file, Field: field, Err: err}
}

// read reads the file at path and parses it, giving a parse error the
// path.
func read[T any](path string, parse func([]byte) (T, error)) (T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(b)
	return v, at(path, err)
}

// at gives a parser's FormatError the path it was read from.
func at(path string, err error) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		fe.File = path
	}
	return err
}
