//go:build linux

package lab

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/internal/procfs"
)

// setSysctls writes each sysctl through the calling thread's /proc/sys and
// reads it back; a value that does not read back as written (whitespace
// aside) is an error.
func setSysctls(m map[string]string) (map[string]string, error) {
	got := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := procfs.SysctlPath(k)
		if err := writeSysctl(p, m[k]); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", k, m[k], err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: read back: %w", k, err)
		}
		v := strings.Join(strings.Fields(string(b)), " ")
		if v != strings.Join(strings.Fields(m[k]), " ") {
			return nil, fmt.Errorf("%s: wrote %q, reads %q", k, m[k], v)
		}
		got[k] = v
	}
	return got, nil
}

// writeSysctl writes v to an existing /proc/sys file (never creating one,
// so a missing key is ENOENT, not a refusal to create).
func writeSysctl(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSysctls reads each sysctl through the calling thread's /proc/sys;
// one that cannot be read is recorded as such.
func readSysctls(m map[string]string) map[string]string {
	got := map[string]string{}
	for k := range m {
		b, err := os.ReadFile(procfs.SysctlPath(k))
		if err != nil {
			got[k] = "unreadable: " + err.Error()
			continue
		}
		got[k] = strings.Join(strings.Fields(string(b)), " ")
	}
	return got
}
