package procfs

import (
	"bytes"
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
