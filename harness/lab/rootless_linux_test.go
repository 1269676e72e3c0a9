//go:build linux

package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// As user nobody, a lab run succeeds through a user namespace. The test
// binary is copied where nobody may execute it. It skips where this
// process cannot switch users, and where the harness finds the lab
// unavailable only if an independent probe agrees that the kernel refuses
// nobody a user namespace (rootlessRefusal); otherwise a refusal is a bug
// of ours and fails the test.
func TestRootless(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "harness-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "harness.test")
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := echoSpec(ModeLab, twoCPUs(t))
	arg, _ := json.Marshal(spec)
	rs := resultLines(startHarness(t, bin, asNobody(), string(arg)))
	if len(rs) != 1 {
		t.Fatalf("want one result, got %+v", rs)
	}
	r := rs[0]
	if r.Unavailable {
		why := rootlessRefusal(t, bin)
		if why == "" {
			t.Fatalf("the harness says the kernel refuses nobody a lab (%s), yet the kernel lets nobody make a user and a network namespace", r.Error)
		}
		t.Skipf("the kernel refuses nobody a lab: %s (the harness: %s)", why, r.Error)
	}
	if r.Error != "" || !r.Result.Valid || r.Result.Mode != ModeLab || !r.Result.UserNS {
		t.Fatalf("rootless lab run: %s\n%s", r.Error, dump(r.Result))
	}
	t.Logf("rootless lab run valid: %d lab namespaces, server %v", len(r.Result.Namespaces), r.Result.Server.Argv)
	// The lab child owns the user namespace the server runs in: it may
	// read every /proc file of the server's threads the loop time needs.
	if th := r.Result.Server.Threads; th == nil || len(th.Snapshots) == 0 || len(th.Unreadable) > 0 || th.Error != "" {
		t.Errorf("rootless: the server's threads were not all read: %+v", th)
	}
}

// nobody is the uid and gid TestRootless runs the harness as.
const nobody = 65534

func asNobody() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
		Pdeathsig:  syscall.SIGKILL,
	}
}

// rootlessRefusal says why the kernel refuses user nobody unprivileged
// user namespaces, or "" if it does not, found without the harness: the
// sysctls that forbid them (Debian's kernel.unprivileged_userns_clone=0,
// user.max_user_namespaces=0, Ubuntu's AppArmor
// kernel.apparmor_restrict_unprivileged_userns=1), else a probe: bin, as
// nobody, starts a child that calls a plain unshare(CLONE_NEWUSER |
// CLONE_NEWNET) (test-userns-probe).
func rootlessRefusal(t *testing.T, bin string) string {
	t.Helper()
	for _, c := range []struct{ path, refuses string }{
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		if b, err := os.ReadFile(c.path); err == nil && strings.TrimSpace(string(b)) == c.refuses {
			return strings.ReplaceAll(strings.TrimPrefix(c.path, "/proc/sys/"), "/", ".") + " = " + c.refuses
		}
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), RoleEnv+"=test-userns-probe")
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = asNobody()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the user namespace probe as nobody: %v: %s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "ok" {
		return "as nobody, " + s
	}
	return ""
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// Where the kernel refuses network namespaces (here, really: a user
// namespace whose user.max_net_namespaces is N makes the clone or unshare
// of any network namespace beyond the Nth below it fail with ENOSPC), Mode
// auto runs on loopback and records why, and Mode lab fails with that
// reason (ErrUnavailable), whether the keeper's clone of the lab child
// is refused (N = 0) or the lab child's unshare of the server's namespace
// (N = 1: the lab child's own is the one allowed).
func TestFallbackWhereRefused(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	auto := echoSpec(ModeAuto, twoCPUs(t))
	lab := auto
	lab.Mode = ModeLab
	a1, _ := json.Marshal(auto)
	a2, _ := json.Marshal(lab)
	attr := &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	for _, c := range []struct {
		max  int
		step string
	}{
		{0, "clone net,pid,mnt: fork/exec /proc/self/exe: no space left on device"},
		{1, "create the server's network namespace: unshare: no space left on device"},
	} {
		t.Run(fmt.Sprintf("max_net_namespaces=%d", c.max), func(t *testing.T) {
			outs := startHarness(t, exe, attr, "--max-netns="+strconv.Itoa(c.max), string(a1), string(a2))
			if len(outs) > 0 && strings.HasPrefix(outs[0].Error, "limit:") {
				t.Skipf("cannot limit network namespaces here: %s", outs[0].Error)
			}
			rs := resultLines(outs)
			if len(rs) != 2 {
				t.Fatalf("want two results, got %s", dump(outs))
			}
			ra, rl := rs[0], rs[1]
			if ra.Error != "" || ra.Result == nil || !ra.Result.Valid || ra.Result.Mode != ModeLoopback ||
				!strings.Contains(ra.Result.Fallback, c.step) {
				t.Errorf("auto: want a valid loopback run with the refusal (%s) recorded: %s\n%s", c.step, ra.Error, dump(ra.Result))
			}
			if !rl.Unavailable || !strings.Contains(rl.Error, c.step) || rl.Result == nil || rl.Result.Server != nil {
				t.Errorf("lab: want ErrUnavailable with the kernel's reason (%s) and nothing started: %q\n%s", c.step, rl.Error, dump(rl.Result))
			}
			if ra.Result != nil {
				t.Logf("auto fell back: %s", ra.Result.Fallback)
			}
		})
	}
}
