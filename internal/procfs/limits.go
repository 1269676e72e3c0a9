package procfs

import (
	"strconv"
	"strings"
)

// Limit is one line of /proc/PID/limits: a resource limit of the process
// (setrlimit's), soft and hard, -1 for "unlimited".
type Limit struct {
	Name       string // "Max open files", "Max cpu time", …
	Soft, Hard int64
	Units      string // "files", "seconds", "bytes", …; "" for a count without one
}

// MaxOpenFiles is the Name of RLIMIT_NOFILE's line.
const MaxOpenFiles = "Max open files"

// ParseLimits reads a limits file: a header line ("Limit Soft Limit Hard
// Limit Units"), then one line per resource, its name (words), soft and
// hard limits (a number or "unlimited") and, for most, units. A line whose
// name is not followed by two limits is refused.
func ParseLimits(b []byte) ([]Limit, error) {
	const file = "limits"
	var out []Limit
	n := 0
	for line := range strings.Lines(string(b)) {
		n++
		f := strings.Fields(line)
		if len(f) == 0 || (n == 1 && f[0] == "Limit") {
			continue
		}
		i := 0
		for i < len(f) && !isLimit(f[i]) {
			i++
		}
		name := strings.Join(f[:i], " ")
		if i == 0 || i+1 >= len(f) || !isLimit(f[i+1]) {
			return nil, bad(file, "line "+strconv.Itoa(n), "%q: want a name, a soft and a hard limit", strings.TrimSpace(line))
		}
		l := Limit{Name: name, Units: strings.Join(f[i+2:], " ")}
		var err error
		if l.Soft, err = parseLimit(f[i]); err != nil {
			return nil, badValue(file, name+" soft", err)
		}
		if l.Hard, err = parseLimit(f[i+1]); err != nil {
			return nil, badValue(file, name+" hard", err)
		}
		out = append(out, l)
	}
	return out, nil
}

// isLimit says whether a field can be a limit: "unlimited" or a number.
func isLimit(s string) bool {
	if s == "unlimited" {
		return true
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func parseLimit(s string) (int64, error) {
	if s == "unlimited" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// ReadLimits reads /proc/PID/limits of process pid (Self for the caller).
func ReadLimits(pid int) ([]Limit, error) {
	return read(Dir(pid)+"/limits", ParseLimits)
}

// ReadFdLimit reads the soft and hard "Max open files" of process pid
// from /proc/PID/limits (-1 for unlimited); a file without that line is a
// FormatError.
func ReadFdLimit(pid int) (soft, hard int64, err error) {
	ls, err := ReadLimits(pid)
	if err != nil {
		return 0, 0, err
	}
	for _, l := range ls {
		if l.Name == MaxOpenFiles {
			return l.Soft, l.Hard, nil
		}
	}
	return 0, 0, &FormatError{File: Dir(pid) + "/limits", Err: errNoLine(MaxOpenFiles)}
}

type errNoLine string

func (e errNoLine) Error() string { return "no " + strconv.Quote(string(e)) + " line" }
