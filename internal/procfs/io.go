package procfs

import (
	"strconv"
	"strings"
)

// IO is a process's or thread's /proc/PID/io (or /proc/PID/task/TID/io):
// the kernel's count of the bytes and calls that passed through read(2)
// and write(2) and their kin (readv, pread, sendfile; not recv, send or
// their msg forms, which are counted nowhere here). Every field is -1
// where its line is missing.
type IO struct {
	// ReadBytes is rchar: the bytes read(2) and its kin returned, from any
	// file (a socket, a pipe, the page cache); a call that returned
	// nothing or failed adds nothing.
	ReadBytes int64
	// WriteBytes is wchar: the bytes write(2) and its kin accepted.
	WriteBytes int64
	// ReadCalls is syscr: the read calls made, whatever they returned
	// (EAGAIN included).
	ReadCalls int64
	// WriteCalls is syscw: the write calls made, whatever they returned.
	WriteCalls int64
}

// ParseIO reads an io file, "key: value" lines; a line the kernel adds and
// this does not know is skipped, a known one that does not parse is
// refused.
func ParseIO(b []byte) (IO, error) {
	const file = "io"
	v := IO{ReadBytes: -1, WriteBytes: -1, ReadCalls: -1, WriteCalls: -1}
	fields := map[string]*int64{"rchar": &v.ReadBytes, "wchar": &v.WriteBytes, "syscr": &v.ReadCalls, "syscw": &v.WriteCalls}
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		p, known := fields[key]
		if !known {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return IO{}, badValue(file, key, err)
		}
		if n < 0 {
			return IO{}, bad(file, key, "%d is negative", n)
		}
		*p = n
	}
	return v, nil
}

// ReadTaskIO reads /proc/PID/task/TID/io: one thread's counts. Like
// syscall, it needs leave to trace the process (fs.ErrPermission
// otherwise).
func ReadTaskIO(pid, tid int) (IO, error) {
	return read(TaskDir(pid, tid)+"/io", ParseIO)
}
