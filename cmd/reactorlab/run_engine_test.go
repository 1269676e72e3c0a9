//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/cli"
)

// TestRunEngineRefusals: --loadgen-engine takes epoll or uring, and uring
// with what only the epoll engine does is refused before anything starts,
// exit 2, in the load generator's words.
func TestRunEngineRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--loadgen-engine", "kqueue"}, `--loadgen-engine = "kqueue" (accepted: epoll or uring)`},
		{[]string{"--loadgen-engine", "uring", "--fault", "coalesced"}, "--loadgen-engine = uring: fault is the epoll engine's only"},
		{[]string{"--loadgen-engine", "uring", "--hot-lead", "1s"}, "--loadgen-engine = uring: hot-lead is the epoll engine's only"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"run", "--reactor", "lt", "--out", filepath.Join(t.TempDir(), "cell"), "--duration", "1s"}, tc.args...)
		if code := run(args, &stdout, &stderr); code != cli.ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), cli.ExitUsage, tc.want)
		}
	}
}

// denyIOURingEnv makes the test binary deny io_uring_setup(2) to itself
// (a seccomp filter on every thread, answering EPERM, as a container
// runtime's profile or kernel.io_uring_disabled does) and then run the
// command line it holds.
const denyIOURingEnv = "REACTORLAB_TEST_DENY_IO_URING"

// denyIOURing installs that filter on every thread of the process.
func denyIOURing() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl PR_SET_NO_NEW_PRIVS", err)
	}
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_SETUP, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return os.NewSyscallError("seccomp", e)
	}
	return nil
}

// TestRunRefusesUringWhereUnavailable: where io_uring cannot run (here a
// seccomp filter answers io_uring_setup with EPERM), run --loadgen-engine
// uring is refused before anything starts, exit 2, with the errno and the
// hint; the epoll engine is not concerned.
func TestRunRefusesUringWhereUnavailable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		engine string
		code   int
		want   []string
	}{
		{"uring", cli.ExitUsage, []string{"--loadgen-engine uring", "io_uring_setup", "EPERM", "kernel.io_uring_disabled"}},
		{"epoll", 0, nil},
	} {
		// The uring cell is refused while its flags are checked, before
		// anything starts; the epoll one, which would run, only has its
		// flags parsed (--help, exit 0): the filter leaves run alone.
		args := []string{"run", "--reactor", "lt", "--out", filepath.Join(t.TempDir(), "cell"), "--duration", "200ms", "--warmup", "0s",
			"--loadgen-engine", tc.engine, "--lab", "off"}
		if tc.engine == "epoll" {
			args = []string{"run", "--loadgen-engine", tc.engine, "--help"}
		}
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), denyIOURingEnv+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", tc.engine, code, tc.code, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr does not say %q:\n%s", tc.engine, w, stderr.String())
			}
		}
	}
}
