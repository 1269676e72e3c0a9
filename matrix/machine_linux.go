//go:build linux

package matrix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/internal/uring"
	"github.com/reactorlab/reactorlab/results"
)

// ToolInfo identifies this build: the module version, the VCS revision the
// build stamped (or, under `go run` and `go test`, which stamp none, the
// one `git` reports for the working directory, if it is the module's
// repository), the Go version and the SHA-256 of the executable.
func ToolInfo() results.Tool {
	t := results.Tool{Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		t.Version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				t.Commit = s.Value
			case "vcs.modified":
				t.Modified = s.Value == "true"
			}
		}
	}
	if t.Commit == "" {
		t.Commit, t.Modified = gitRevision()
	}
	t.Executable = executableHash()
	return t
}

// executableHash is the SHA-256 of this process's executable, hex, or ""
// if it cannot be read; computed once.
var executableHash = sync.OnceValue(func() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
})

// gitRevision asks git for the working directory's commit, bounded to two
// seconds; "" when there is no git or no repository.
func gitRevision() (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	rev := strings.TrimSpace(string(out))
	st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output()
	return rev, err == nil && len(bytes.TrimSpace(st)) > 0
}

// MachineInfo describes this machine: host name, kernel, CPU model, the
// number of online CPUs, and what its kernel offers io_uring users
// (uring.ProbeKernel: a ring of four entries, created and closed).
func MachineInfo() results.Machine {
	m := results.Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	m.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Version[:])
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n := countCPUList(strings.TrimSpace(string(b))); n > 0 {
			m.CPUs = n
		}
	}
	if model, err := procfs.ReadCPUModel(); err == nil {
		m.CPUModel = model
	}
	if p, err := uring.ProbeKernel(); err == nil {
		m.IOURing = &p
	} else {
		m.IOURingError = err.Error()
	}
	return m
}

// countCPUList counts the CPUs of a kernel CPU list ("0-3,8,10-11"); 0 if
// it does not parse.
func countCPUList(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}
