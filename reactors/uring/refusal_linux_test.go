//go:build linux

package uring_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

const refusalChildEnv = "REACTORLAB_URING_REFUSAL_CHILD"

// TestRefusedWithoutIOUring: where io_uring_setup fails, New refuses uring
// with the errno and a hint, wrapping reactors.ErrNoCompletion (what tests
// skip on), and opens nothing. A child process of this test binary denies
// itself io_uring_setup with a seccomp filter (ENOSYS, as a container
// runtime's default profile does), then asks for the design.
func TestRefusedWithoutIOUring(t *testing.T) {
	if os.Getenv(refusalChildEnv) != "" {
		refusalChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRefusedWithoutIOUring$", "-test.count=1")
	cmd.Env = append(os.Environ(), refusalChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := string(out)
	t.Logf("child: %s", got)
	for _, want := range []string{"refused: design uring: io_uring unavailable", "ENOSYS", "seccomp", "no-completion: true"} {
		if !strings.Contains(got, want) {
			t.Errorf("child's report lacks %q:\n%s", want, got)
		}
	}
}

// refusalChild installs the filter on every thread of the process, then
// prints what New answers.
func refusalChild() {
	const retErrno, retAllow = 0x00050000, 0x7fff0000 // SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: unix.BPF_RET | unix.BPF_K, K: retErrno | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: retAllow},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("prctl:", err)
		os.Exit(1)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fmt.Println("seccomp:", e)
		os.Exit(1)
	}
	r, err := designs.New(reactors.Uring, reactors.DefaultConfig())
	if err == nil {
		r.Stop()
		fmt.Println("not refused")
		os.Exit(1)
	}
	fmt.Printf("refused: %v\nno-completion: %v\n", err, errors.Is(err, reactors.ErrNoCompletion))
}
