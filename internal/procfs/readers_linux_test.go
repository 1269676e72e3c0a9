package procfs

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The readers read this very process as the kernel shows it.
func TestReadSelf(t *testing.T) {
	s, err := ReadStat(os.Getpid())
	if err != nil || s.Pid != os.Getpid() || s.PPid != os.Getppid() || s.Zombie() {
		t.Fatalf("ReadStat(self) = %+v, %v", s, err)
	}
	st, err := ReadStatus(Self)
	if err != nil || st.RSS <= 0 || st.Threads < 1 || st.CPUList == "" || st.VoluntarySwitches < 0 || st.InvoluntarySwitches < 0 {
		t.Errorf("ReadStatus(Self) = %+v, %v", st, err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	tids, err := Tasks(Self)
	if err != nil || !slices.Contains(tids, tid) {
		t.Errorf("Tasks(Self) = %v, %v; want %d among them", tids, err, tid)
	}
	if _, err := os.Stat(SchedstatPath(Self)); err == nil {
		if s, err := ReadTaskSchedstat(os.Getpid(), tid); err != nil || s.RunNs <= 0 {
			t.Errorf("ReadTaskSchedstat = %+v, %v", s, err)
		}
	}
	// A thread reading its own syscall file is in read(2) as it does.
	if s, err := ReadTaskSyscall(os.Getpid(), tid); err != nil || !s.InCall || s.Nr != unix.SYS_READ {
		t.Errorf("ReadTaskSyscall(this thread) = %+v, %v; want in read (%d)", s, err, unix.SYS_READ)
	}
	soft, hard, err := ReadFdLimit(Self)
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil || err != nil || uint64(soft) != rl.Cur || uint64(hard) != rl.Max {
		t.Errorf("ReadFdLimit = %d, %d, %v; getrlimit %+v", soft, hard, err, rl)
	}
	if cpus, err := ReadCPUStat(); err != nil || len(cpus) == 0 {
		t.Errorf("ReadCPUStat = %v, %v", cpus, err)
	}
}

// An epoll descriptor's items, and kcmp, as the kernel shows them.
func TestEpollSelf(t *testing.T) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(efd)}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		t.Fatal(err)
	}
	fds, err := ReadFds(Self)
	if err != nil || !slices.Contains(fds, Fd{Num: ep, Target: EpollTarget}) {
		t.Fatalf("ReadFds(Self) = %v, %v; want %d → %s", fds, err, ep, EpollTarget)
	}
	var st unix.Stat_t
	if err := unix.Fstat(efd, &st); err != nil {
		t.Fatal(err)
	}
	items, err := ReadEpollItems(Self, ep)
	if err != nil || len(items) != 1 || items[0].Fd != efd || items[0].Ino != st.Ino || items[0].Events&unix.EPOLLEXCLUSIVE == 0 {
		t.Fatalf("ReadEpollItems = %+v, %v; want eventfd %d, inode %d, EPOLLEXCLUSIVE", items, err, efd, st.Ino)
	}
	dup, err := unix.Dup(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	same, err := SameFile(os.Getpid(), ep, os.Getpid(), dup)
	if err != nil {
		t.Skip("kcmp:", err)
	}
	other, _ := SameFile(os.Getpid(), ep, os.Getpid(), efd)
	if !same || other {
		t.Errorf("SameFile: dup %v (want true), eventfd %v (want false)", same, other)
	}
}

// The command line and a sysctl read as the kernel shows them to this
// process.
func TestReadCmdlineAndSysctl(t *testing.T) {
	argv, err := ReadCmdline(Self)
	if err != nil || !slices.Equal(argv, os.Args) {
		t.Errorf("ReadCmdline(Self) = %q, %v; want %q", argv, err, os.Args)
	}
	v, err := ReadSysctl("kernel.pid_max")
	if err != nil || v == "" || v[len(v)-1] == '\n' {
		t.Errorf("ReadSysctl(kernel.pid_max) = %q, %v", v, err)
	}
}

// This process's namespace links and uid map read as the kernel writes
// them.
func TestNamespaceAndUIDMap(t *testing.T) {
	for _, k := range []string{"net", "pid", "mnt", "user"} {
		l, err := Namespace(Self, k)
		if err != nil || !strings.HasPrefix(l, k+":[") {
			t.Errorf("Namespace(Self, %s) = %q, %v", k, l, err)
		}
		if own, err := Namespace(os.Getpid(), k); err != nil || own != l {
			t.Errorf("Namespace(pid, %s) = %q, %v; want %q", k, own, err, l)
		}
	}
	m, err := ReadUIDMap(Self)
	if err != nil || len(m) == 0 {
		t.Errorf("ReadUIDMap(Self) = %v, %v", m, err)
	}
}

// A thread's io counts grow by the read calls it makes and the bytes
// they return; a read that returns nothing adds a call and no bytes.
func TestReadTaskIOCountsThisThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	p := make([]int, 2)
	if err := unix.Pipe2(p, unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	before, err := ReadTaskIO(os.Getpid(), tid)
	if err != nil || before.ReadCalls < 0 || before.ReadBytes < 0 {
		t.Fatalf("ReadTaskIO = %+v, %v", before, err)
	}
	buf := make([]byte, 100)
	for range 10 {
		if _, err := unix.Read(p[0], buf); err != unix.EAGAIN {
			t.Fatalf("read of an empty pipe: %v, want EAGAIN", err)
		}
	}
	if _, err := unix.Write(p[1], buf); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Read(p[0], buf); n != 100 || err != nil {
		t.Fatalf("read: %d, %v", n, err)
	}
	after, err := ReadTaskIO(os.Getpid(), tid)
	if err != nil {
		t.Fatal(err)
	}
	// The reader's own read of the io file adds a call and its bytes too.
	calls, bytes := after.ReadCalls-before.ReadCalls, after.ReadBytes-before.ReadBytes
	if calls < 11 || bytes < 100 || after.WriteCalls-before.WriteCalls < 1 || after.WriteBytes-before.WriteBytes < 100 {
		t.Errorf("between two readings: %d read calls, %d bytes read, %+v → %+v; want at least 11 calls (10 empty) and 100 bytes", calls, bytes, before, after)
	}
}
