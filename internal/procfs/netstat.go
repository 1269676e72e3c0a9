package procfs

import (
	"strconv"
	"strings"
)

// NetstatPath is the extended TCP/IP counters of the calling thread's
// network namespace.
const NetstatPath = "/proc/net/netstat"

// ParseNetstat reads /proc/net/netstat: pairs of lines per group
// ("TcpExt:", "IpExt:", "MPTcpExt:"), the first naming the counters, the
// second giving their values in the same order, as unsigned decimals. It
// returns each group's counters by name, the group without its colon. A
// value line whose length differs from its name line's, or a value that is
// not a number, is refused.
func ParseNetstat(b []byte) (map[string]map[string]uint64, error) {
	const file = "net/netstat"
	out := map[string]map[string]uint64{}
	names := map[string][]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		group, ok := strings.CutSuffix(f[0], ":")
		if !ok {
			return nil, bad(file, "", "line %q has no group name", strings.TrimSpace(line))
		}
		keys, seen := names[group]
		if !seen {
			names[group] = f[1:]
			continue
		}
		if _, done := out[group]; done {
			return nil, bad(file, group, "a third line")
		}
		if len(f)-1 != len(keys) {
			return nil, bad(file, group, "%d values for %d names", len(f)-1, len(keys))
		}
		vals := map[string]uint64{}
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, badValue(file, group+" "+keys[i], err)
			}
			vals[keys[i]] = n
		}
		out[group] = vals
	}
	for g := range names {
		if _, ok := out[g]; !ok {
			return nil, bad(file, g, "a line of names without a line of values")
		}
	}
	return out, nil
}

// ReadTcpExt reads the TcpExt counters of /proc/net/netstat (the calling
// thread's network namespace's), by name; a file without them is a
// FormatError.
func ReadTcpExt() (map[string]uint64, error) {
	groups, err := read(NetstatPath, ParseNetstat)
	if err != nil {
		return nil, err
	}
	ext, ok := groups["TcpExt"]
	if !ok {
		return nil, &FormatError{File: NetstatPath, Err: errNoLine("TcpExt")}
	}
	return ext, nil
}
