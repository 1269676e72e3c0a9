package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// ReadCmdline is process pid's command line, its arguments in order
// (/proc/PID/cmdline: each ends in a NUL). A process whose command line
// is empty (a kernel thread, a zombie) has none.
func ReadCmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(Dir(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}

// SysctlPath is the /proc/sys file of a sysctl named as sysctl(8) names
// it ("net.core.somaxconn").
func SysctlPath(name string) string {
	return "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
}

// ReadSysctl is the value of a sysctl as its /proc/sys file holds it,
// without the trailing newline: one number, or several separated by
// white space ("4096 131072 6291456"). It reads the network namespace of
// the calling thread's process for a net.* sysctl.
func ReadSysctl(name string) (string, error) {
	b, err := os.ReadFile(SysctlPath(name))
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// ParseCPUModel is the first "model name" of /proc/cpuinfo's bytes; ""
// when there is none (some architectures do not name it).
func ParseCPUModel(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ReadCPUModel is ParseCPUModel of this machine's /proc/cpuinfo.
func ReadCPUModel() (string, error) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "", err
	}
	return ParseCPUModel(b), nil
}

// Namespace is the link of process pid's namespace of a kind ("net",
// "pid", "mnt", "user": the names of /proc/PID/ns), "net:[4026531840]":
// two processes, or a process at two moments, are in the same namespace
// exactly when their links are equal.
func Namespace(pid int, kind string) (string, error) {
	return os.Readlink(Dir(pid) + "/ns/" + kind)
}

// ReadUIDMap is process pid's /proc/PID/uid_map, one line per mapping of
// three fields (first ID inside, first ID outside, count), as the kernel
// writes it.
func ReadUIDMap(pid int) ([][3]string, error) {
	b, err := os.ReadFile(Dir(pid) + "/uid_map")
	if err != nil {
		return nil, err
	}
	var out [][3]string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, bad("uid_map", fmt.Sprintf("line %d", i+1), "%d fields, want 3", len(f))
		}
		out = append(out, [3]string{f[0], f[1], f[2]})
	}
	return out, nil
}
