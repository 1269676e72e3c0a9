//go:build linux

package uring

import (
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newRing creates a ring on the test goroutine's locked thread and closes it at
// the end of the test; it skips, with the kernel's reason, where io_uring is
// unavailable (ENOSYS: no io_uring; EPERM: disabled by sysctl or policy).
// socketPair is a connected pair of Unix stream sockets, closed when the
// test ends.
func socketPair(t *testing.T) [2]int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds
}

func newRing(t *testing.T, cfg Config) *Ring {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := New(cfg)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && (e.Errno == unix.ENOSYS || e.Errno == unix.EPERM) {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// reapAll waits until want completions have been passed or the bound passes.
func reapAll(t *testing.T, r *Ring, want int, bound time.Duration) []CQE {
	t.Helper()
	var got []CQE
	deadline := time.Now().Add(bound)
	for len(got) < want && time.Now().Before(deadline) {
		if _, err := r.Wait(1, 100*time.Millisecond); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if _, err := r.Reap(func(c CQE) { got = append(got, c) }); err != nil {
			t.Fatalf("Reap: %v", err)
		}
	}
	if len(got) < want {
		t.Fatalf("%d completions within %v, want %d: %+v", len(got), bound, want, got)
	}
	return got
}

// The Go structs are the kernel's: sizes and field offsets from
// include/uapi/linux/io_uring.h.
func TestLayoutsMatchTheKernelHeader(t *testing.T) {
	var s SQE
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof(io_uring_sqe)", unsafe.Sizeof(s), 64},
		{"sqe.fd", unsafe.Offsetof(s.Fd), 4},
		{"sqe.off", unsafe.Offsetof(s.Off), 8},
		{"sqe.addr", unsafe.Offsetof(s.Addr), 16},
		{"sqe.len", unsafe.Offsetof(s.Len), 24},
		{"sqe.op_flags", unsafe.Offsetof(s.OpFlags), 28},
		{"sqe.user_data", unsafe.Offsetof(s.UserData), 32},
		{"sqe.buf_group", unsafe.Offsetof(s.BufGroup), 40},
		{"sizeof(io_uring_cqe)", unsafe.Sizeof(CQE{}), 16},
		{"sizeof(io_uring_params)", unsafe.Sizeof(params{}), 120},
		{"params.sq_off", unsafe.Offsetof(params{}.sqOff), 40},
		{"params.cq_off", unsafe.Offsetof(params{}.cqOff), 80},
		{"sizeof(io_sqring_offsets)", unsafe.Sizeof(sqringOffsets{}), 40},
		{"sizeof(io_cqring_offsets)", unsafe.Sizeof(cqringOffsets{}), 40},
		{"sizeof(io_uring_getevents_arg)", unsafe.Sizeof(getEventsArg{}), 24},
		{"getevents_arg.ts", unsafe.Offsetof(getEventsArg{}.ts), 16},
		{"sizeof(io_uring_buf_reg)", unsafe.Sizeof(bufReg{}), 40},
		{"buf_reg.bgid", unsafe.Offsetof(bufReg{}.bgid), 12},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, the header says %d", c.name, c.got, c.want)
		}
	}
}

func TestNopRoundTrip(t *testing.T) {
	r := newRing(t, Config{Entries: 8})
	for ud := uint64(1); ud <= 8; ud++ {
		if _, err := r.Nop(ud); err != nil {
			t.Fatal(err)
		}
	}
	got := reapAll(t, r, 8, 5*time.Second)
	seen := map[uint64]int{}
	for _, c := range got {
		if c.Res != 0 || c.Flags != 0 {
			t.Errorf("nop %d: res %d flags %#x, want 0 0", c.UserData, c.Res, c.Flags)
		}
		seen[c.UserData]++
	}
	for ud := uint64(1); ud <= 8; ud++ {
		if seen[ud] != 1 {
			t.Errorf("nop %d completed %d times, want once", ud, seen[ud])
		}
	}
	if s := r.Stats(); s.Submitted != 8 || s.Reaped != 8 {
		t.Errorf("stats %+v, want 8 submitted and 8 reaped", s)
	}
}

func TestSetupAsksForSingleIssuerAndDeferTaskrun(t *testing.T) {
	r := newRing(t, Config{Entries: 4, CQEntries: 16})
	s := r.Setup()
	if s.SQEntries != 4 || s.CQEntries != 16 {
		t.Errorf("sizes sq %d cq %d, want 4 and 16", s.SQEntries, s.CQEntries)
	}
	var u unix.Utsname
	unix.Uname(&u)
	if len(s.Degraded) > 0 {
		t.Logf("kernel %s degraded: %v", unix.ByteSliceToString(u.Release[:]), s.Degraded)
		return
	}
	for _, f := range []string{"CQSIZE", "SINGLE_ISSUER", "DEFER_TASKRUN"} {
		if !strings.Contains(strings.Join(s.Flags, "|"), f) {
			t.Errorf("flags %v lack %s with nothing degraded", s.Flags, f)
		}
	}
	plain := newRing(t, Config{Entries: 4, NoSingleIssuer: true})
	if got := plain.Setup().FlagBits; got&(setupSingleIssuer|setupDeferTaskrun) != 0 {
		t.Errorf("NoSingleIssuer ring has flags %v", plain.Setup().Flags)
	}
}

// A ring created with SINGLE_ISSUER refuses a submission from another OS
// thread with EEXIST, and the error says what rule was broken.
func TestAnotherThreadIsRefusedWithAHint(t *testing.T) {
	r := newRing(t, Config{Entries: 4})
	if r.Setup().FlagBits&setupSingleIssuer == 0 {
		t.Skip("no SINGLE_ISSUER on this kernel:", r.Setup().Degraded)
	}
	if _, err := r.Nop(1); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, err := r.Submit()
		errc <- err
	}()
	err := <-errc
	if !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), "runtime.LockOSThread") {
		t.Fatalf("submit from another thread: %v, want EEXIST naming runtime.LockOSThread", err)
	}
	reapAll(t, r, 1, 5*time.Second)
}

func TestConfigRefusalsNameTheField(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Entries: 40000}, "Config.Entries 40000"},
		{Config{Entries: 8, CQEntries: 4}, "Config.CQEntries 4"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
}

// Ring creation failures carry the errno and say what to change.
func TestSetupErrorsCarryErrnoAndHint(t *testing.T) {
	for _, c := range []struct {
		errno unix.Errno
		hint  string
	}{
		{unix.ENOSYS, "CONFIG_IO_URING"},
		{unix.EPERM, "kernel.io_uring_disabled"},
		{unix.ENOMEM, "RLIMIT_MEMLOCK"},
		{unix.EINVAL, "entries"},
		{unix.EMFILE, "RLIMIT_NOFILE"},
	} {
		err := error(&Error{Op: "io_uring_setup", Detail: "entries=8", Errno: c.errno, Hint: setupHint(c.errno)})
		if !errors.Is(err, c.errno) {
			t.Errorf("%v: errors.Is(err, %v) is false", err, c.errno)
		}
		msg := err.Error()
		for _, want := range []string{"io_uring_setup(entries=8)", unix.ErrnoName(c.errno), c.hint} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q lacks %q", msg, want)
			}
		}
	}
}

func TestWaitTimesOutWithoutACompletion(t *testing.T) {
	for _, noExt := range []bool{false, true} {
		name := "ext_arg"
		if noExt {
			name = "timeout_sqe"
		}
		t.Run(name, func(t *testing.T) {
			r := newRing(t, Config{Entries: 4, NoExtArg: noExt})
			start := time.Now()
			n, err := r.Wait(1, 50*time.Millisecond)
			took := time.Since(start)
			if err != nil || n != 0 {
				t.Fatalf("Wait: %d ready, %v; want 0 and no error", n, err)
			}
			if took < 45*time.Millisecond || took > 5*time.Second {
				t.Errorf("Wait(1, 50ms) took %v", took)
			}
			if _, err := r.Reap(func(c CQE) { t.Errorf("unexpected completion %+v", c) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTimeoutCompletesWithETIME(t *testing.T) {
	r := newRing(t, Config{Entries: 4})
	if _, err := r.Timeout(10*time.Millisecond, 0, 5); err != nil {
		t.Fatal(err)
	}
	got := reapAll(t, r, 1, 5*time.Second)
	if got[0].UserData != 5 || !errors.Is(got[0].Err(), unix.ETIME) {
		t.Fatalf("timeout completion %+v (err %v), want user_data 5 and ETIME", got[0], got[0].Err())
	}
	if r.Pinned() != 0 {
		t.Errorf("%d pins left after the timeout's completion", r.Pinned())
	}
}

// A goroutine on another thread wakes a loop blocked in Wait with no bound.
func TestWakerUnblocksAWait(t *testing.T) {
	for _, noExt := range []bool{false, true} {
		t.Run(map[bool]string{false: "ext_arg", true: "timeout_sqe"}[noExt], func(t *testing.T) {
			r := newRing(t, Config{Entries: 4, NoExtArg: noExt})
			w, err := r.NewWaker(7)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			for round := 0; round < 3; round++ {
				woke := make(chan error, 1)
				go func() {
					time.Sleep(20 * time.Millisecond)
					woke <- w.Wake()
				}()
				start := time.Now()
				var got []CQE
				for len(got) == 0 && time.Since(start) < 10*time.Second {
					// Only the wake, 20ms in, can end this wait before its 10s bound.
					if _, err := r.Wait(1, 10*time.Second); err != nil {
						t.Fatal(err)
					}
					if _, err := r.Reap(func(c CQE) { got = append(got, c) }); err != nil {
						t.Fatal(err)
					}
				}
				if took := time.Since(start); took > 5*time.Second {
					t.Fatalf("round %d: the wait lasted %v after a wake at 20ms", round, took)
				}
				if err := <-woke; err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].UserData != 7 || got[0].Res != 8 {
					t.Fatalf("round %d: completions %+v, want one read of 8 bytes with user_data 7", round, got)
				}
				if err := w.Rearm(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestCancelByFD(t *testing.T) {
	r := newRing(t, Config{Entries: 8})
	fds := socketPair(t)
	br, err := r.NewBufRing(3, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RecvMultishot(fds[0], br, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Timeout(time.Hour, 0, 11); err != nil { // on no descriptor: must survive the cancel
		t.Fatal(err)
	}
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CancelFD(fds[0], 20); err != nil {
		t.Fatal(err)
	}
	got := reapAll(t, r, 2, 5*time.Second)
	byUD := map[uint64]CQE{}
	for _, c := range got {
		byUD[c.UserData] = c
	}
	if c, ok := byUD[10]; !ok || !errors.Is(c.Err(), unix.ECANCELED) || c.More() {
		t.Errorf("recv completion %+v (err %v), want ECANCELED and no CQEFMore", c, c.Err())
	}
	if c, ok := byUD[20]; !ok || c.Res != 1 {
		t.Errorf("cancel completion %+v, want res 1 (one operation cancelled)", c)
	}
	if _, ok := byUD[11]; ok {
		t.Errorf("the timeout on no descriptor was cancelled by a cancel of fd %d", fds[0])
	}
}

func TestProbeListsTheOpcodesUsedAndRoundTripsThroughJSON(t *testing.T) {
	r := newRing(t, Config{Entries: 4})
	p, err := r.Probe()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"NOP", "ACCEPT", "RECV", "SEND", "CLOSE", "ASYNC_CANCEL", "TIMEOUT", "READ"} {
		if !p.Supports(op) {
			t.Errorf("probe lacks %s: %v", op, p.Opcodes)
		}
	}
	for _, f := range []string{"NODROP", "FAST_POLL"} {
		if !p.HasFeature(f) {
			t.Errorf("features lack %s: %v", f, p.Features)
		}
	}
	if p.Kernel == "" || p.Kernel == "unknown" || int(p.LastOp) < 47 {
		t.Errorf("probe kernel %q last op %d", p.Kernel, p.LastOp)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Probe
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, back) {
		t.Fatalf("JSON round trip changed the probe:\n%+v\n%+v\n%s", p, back, b)
	}
	for _, key := range []string{`"opcodes":`, `"features":`, `"kernel":`, `"setup":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("manifest JSON lacks %s: %s", key, b)
		}
	}
	k, err := ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(k.Opcodes, p.Opcodes) {
		t.Errorf("ProbeKernel opcodes %v differ from the ring's %v", k.Opcodes, p.Opcodes)
	}
}

// Close with operations in flight ends within its bound, releases every pin
// and closes the ring descriptor.
func TestCloseWithOperationsInFlight(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(Config{Entries: 8})
	if err != nil {
		var e *Error
		if errors.As(err, &e) && (e.Errno == unix.ENOSYS || e.Errno == unix.EPERM) {
			t.Skipf("io_uring unavailable here: %v", err)
		}
		t.Fatal(err)
	}
	fds := socketPair(t)
	br, err := r.NewBufRing(1, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.NewWaker(2)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := r.RecvMultishot(fds[0], br, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Timeout(time.Hour, 0, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	fd := r.FD()
	start := time.Now()
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v with operations in flight", took)
	}
	if r.Pinned() != 0 {
		t.Errorf("%d pins left after Close", r.Pinned())
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("ring fd %d after Close: fcntl says %v, want EBADF", fd, err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := r.Nop(1); err == nil {
		t.Error("Nop on a closed ring succeeded")
	}
}

// withSetup plays a kernel whose io_uring_setup answers refuse(flags) (0: the
// real call) for the rest of the test.
func withSetup(t *testing.T, refuse func(flags uint32) unix.Errno) {
	t.Cleanup(func() { setupCall = sysSetup })
	setupCall = func(entries uint32, p *params) (int, unix.Errno) {
		if errno := refuse(p.flags); errno != 0 {
			return -1, errno
		}
		return sysSetup(entries, p)
	}
}

// A kernel that refuses DEFER_TASKRUN, then SINGLE_ISSUER, gets a ring without
// them, and Setup says which was dropped and why.
func TestSetupDegradesWithTheReason(t *testing.T) {
	newRing(t, Config{Entries: 4}) // skips where io_uring is unavailable
	withSetup(t, func(flags uint32) unix.Errno {
		if flags&(setupDeferTaskrun|setupSingleIssuer) != 0 {
			return unix.EINVAL
		}
		return 0
	})
	r := newRing(t, Config{Entries: 4})
	s := r.Setup()
	if s.FlagBits&(setupDeferTaskrun|setupSingleIssuer) != 0 {
		t.Errorf("flags %v after the kernel refused them", s.Flags)
	}
	if len(s.Degraded) != 2 || !strings.Contains(s.Degraded[0], "DEFER_TASKRUN") || !strings.Contains(s.Degraded[1], "SINGLE_ISSUER") || !strings.Contains(s.Degraded[1], "EINVAL") {
		t.Errorf("degraded %q, want DEFER_TASKRUN then SINGLE_ISSUER refused with EINVAL", s.Degraded)
	}
	if _, err := r.Nop(1); err != nil {
		t.Fatal(err)
	}
	reapAll(t, r, 1, 5*time.Second)
}

// A refusal other than EINVAL is not degraded around: New fails with the errno,
// the flags asked for, and the hint.
func TestSetupRefusalIsNotDegradedAround(t *testing.T) {
	calls := 0
	withSetup(t, func(uint32) unix.Errno { calls++; return unix.EPERM })
	_, err := New(Config{Entries: 8})
	var e *Error
	if !errors.As(err, &e) || e.Errno != unix.EPERM || calls != 1 {
		t.Fatalf("New: %v after %d setup calls, want one call refused with EPERM", err, calls)
	}
	for _, want := range []string{"io_uring_setup", "SINGLE_ISSUER|DEFER_TASKRUN", "kernel.io_uring_disabled"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
