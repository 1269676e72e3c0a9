package procfs

import (
	"errors"
	"strings"
	"testing"
)

// refused checks that err is a FormatError whose message names field.
func refused(t *testing.T, what string, err error, field string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Errorf("%s: err = %v, want a *FormatError", what, err)
		return
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("%s: %q does not name %q", what, err, field)
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses, ')' and '(' inside;
	// utime 250, stime 7; starttime 98765; no exit code field.
	line := "1234 (a (b) c) d)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 7 0 0 20 0 3 0 98765 1000 50 0\n"
	s, err := ParseStat([]byte(line))
	want := Stat{Pid: 1234, Comm: "a (b) c) d)", State: "S", PPid: 17, Pgrp: 4242, UTime: 250, STime: 7, Start: 98765, ExitCode: -1}
	if err != nil || s != want {
		t.Fatalf("ParseStat = %+v, %v; want %+v", s, err, want)
	}
	if s.Zombie() {
		t.Error("state S seen as a zombie")
	}
	// A zombie with all 52 fields: exit code 256 (exit status 1).
	f := make([]string, 52-2)
	for i := range f {
		f[i] = "0"
	}
	f[0], f[49] = "Z", "256"
	s, err = ParseStat([]byte("9 (x) " + strings.Join(f, " ") + "\n"))
	if err != nil || !s.Zombie() || s.ExitCode != 256 {
		t.Errorf("zombie line: %+v, %v", s, err)
	}
	for _, c := range []struct{ line, field string }{
		{"", "no ')'"},
		{"9 x) S", "no '('"},
		{"9 (x S 1 2", "no ')'"},
		{"9 (x) S 1 2", "fields after the command name"},
		{"nine (x) S 1 9 9 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0 0", "pid (field 1)"},
		{"9 (x) S one 9 9 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0 0", "ppid (field 4)"},
		{"9 (x) S 1 9 9 0 -1 0 0 0 0 0 u 1 0 0 20 0 1 0 5 0 0 0", "utime (field 14)"},
		{"9 (x) S 1 9 9 0 -1 0 0 0 0 0 1 -s 0 0 20 0 1 0 5 0 0 0", "stime (field 15)"},
		{"9 (x) S 1 9 9 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 start 0 0 0", "starttime (field 22)"},
		{"9 (x) Z " + strings.Repeat("0 ", 48) + "exit", "exit_code (field 52)"},
	} {
		_, err := ParseStat([]byte(c.line))
		refused(t, "ParseStat("+c.line+")", err, c.field)
	}
}

func TestParseStatus(t *testing.T) {
	s, err := ParseStatus([]byte("Name:\techo: (x)\nState:\tS (sleeping)\nVmHWM:\t    8000 kB\nVmRSS:\t    6000 kB\nThreads:\t5\nCpus_allowed:\tf\nCpus_allowed_list:\t0-3\nvoluntary_ctxt_switches:\t42\nnonvoluntary_ctxt_switches:\t3\n"))
	want := Status{RSS: 6000 << 10, PeakRSS: 8000 << 10, Threads: 5, CPUList: "0-3", VoluntarySwitches: 42, InvoluntarySwitches: 3}
	if err != nil || s != want {
		t.Fatalf("ParseStatus = %+v, %v; want %+v", s, err, want)
	}
	// A kernel thread: no Vm lines; nothing known at all.
	if s, err := ParseStatus([]byte("Name:\tkthreadd\nno colon here\n")); err != nil || s != (Status{VoluntarySwitches: -1, InvoluntarySwitches: -1}) {
		t.Errorf("no known lines: %+v, %v", s, err)
	}
	for _, c := range []struct{ text, field string }{
		{"VmRSS:\tlots kB\n", "VmRSS"},
		{"VmHWM:\t-1 kB\n", "VmHWM"},
		{"Threads:\tfive\n", "Threads"},
		{"voluntary_ctxt_switches:\t\n", "voluntary_ctxt_switches"},
		{"nonvoluntary_ctxt_switches:\tmany\n", "nonvoluntary_ctxt_switches"},
	} {
		_, err := ParseStatus([]byte(c.text))
		refused(t, "ParseStatus("+c.text+")", err, c.field)
	}
}

func TestParseSchedstat(t *testing.T) {
	if s, err := ParseSchedstat([]byte("123 456 7\n")); err != nil || s != (Schedstat{RunNs: 123, WaitNs: 456, Slices: 7}) {
		t.Errorf("ParseSchedstat = %+v, %v", s, err)
	}
	if s, err := ParseSchedstat([]byte("123 456\n")); err != nil || s != (Schedstat{RunNs: 123, WaitNs: 456}) {
		t.Errorf("without timeslices = %+v, %v", s, err)
	}
	for _, c := range []struct{ line, field string }{
		{"", "at least 2 fields"}, {"12", "at least 2 fields"}, {"x 3 4", "run time (field 1)"},
		{"12 y 4", "run-queue wait (field 2)"}, {"12 3 z", "timeslices (field 3)"},
	} {
		_, err := ParseSchedstat([]byte(c.line))
		refused(t, "ParseSchedstat("+c.line+")", err, c.field)
	}
}

func TestParseEpollItems(t *testing.T) {
	text := "pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t2071\n" +
		"tfd:        5 events:       19 data:                5  pos:0 ino:2d sdev:8\n" +
		"tfd:       12 events: 10000019 data:     7fff00000003  pos:0 ino:1f4 sdev:8\n"
	got, err := ParseEpollItems([]byte(text))
	want := []EpollItem{{Fd: 5, Events: 0x19, Data: 5, Ino: 0x2d}, {Fd: 12, Events: 0x10000019, Data: 0x7fff00000003, Ino: 0x1f4}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("ParseEpollItems = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseEpollItems([]byte("pos:\t0\nflags:\t02000002\n")); err != nil || len(got) != 0 {
		t.Errorf("not an epoll descriptor: %+v, %v", got, err)
	}
	for _, c := range []struct{ line, field string }{
		{"tfd: five events: 19 ino:2d", "line 1 tfd"},
		{"tfd: 5 events: zz ino:2d", "line 1 events"},
		{"pos:0\ntfd: 5 events: 19 ino:xyz", "line 2 ino"},
		{"tfd: 5 events: 19 data: 5", "line 1"},
		{"tfd: 5 events:", "line 1 events"},
	} {
		_, err := ParseEpollItems([]byte(c.line))
		refused(t, "ParseEpollItems("+c.line+")", err, c.field)
	}
}

func TestParseLimits(t *testing.T) {
	text := "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max cpu time              unlimited            unlimited            seconds   \n" +
		"Max open files            1024                 1048576              files     \n" +
		"Max nice priority         0                    0                    \n"
	got, err := ParseLimits([]byte(text))
	want := []Limit{{"Max cpu time", -1, -1, "seconds"}, {"Max open files", 1024, 1048576, "files"}, {"Max nice priority", 0, 0, ""}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParseLimits = %+v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i+2, got[i], want[i])
		}
	}
	for _, c := range []struct{ text, field string }{
		{"Max open files 1024\n", "line 1"},
		{"1024 2048 files\n", "line 1"},
		{"Limit Soft Limit Hard Limit Units\nMax open files lots many files\n", "line 2"},
		{"Max open files 99999999999999999999 1 files\n", "Max open files soft"},
	} {
		_, err := ParseLimits([]byte(c.text))
		refused(t, "ParseLimits("+c.text+")", err, c.field)
	}
}

func TestParseNetstat(t *testing.T) {
	text := "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 7 9\nIpExt: InOctets\nIpExt: 18446744073709551615\n"
	got, err := ParseNetstat([]byte(text))
	if err != nil || got["TcpExt"]["ListenOverflows"] != 7 || got["TcpExt"]["ListenDrops"] != 9 || got["IpExt"]["InOctets"] != 1<<64-1 {
		t.Fatalf("ParseNetstat = %+v, %v", got, err)
	}
	for _, c := range []struct{ text, field string }{
		{"TcpExt: A B\nTcpExt: 1\n", "TcpExt"},
		{"TcpExt: A B\nTcpExt: 1 x\n", "TcpExt B"},
		{"TcpExt: A B\n", "TcpExt"},
		{"TcpExt A\nTcpExt 1\n", "no group name"},
		{"TcpExt: A\nTcpExt: 1\nTcpExt: 2\n", "TcpExt"},
	} {
		_, err := ParseNetstat([]byte(c.text))
		refused(t, "ParseNetstat("+c.text+")", err, c.field)
	}
}

func TestParseCPUStat(t *testing.T) {
	text := "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 10 20 30 40 50 60 70 80\nintr 1 2 3\nctxt 99\n"
	got, err := ParseCPUStat([]byte(text))
	if err != nil || len(got) != 2 || got[0] != (CPUTimes{1, 2, 3, 4, 5, 6, 7, 8}) || got[1].Steal != 80 {
		t.Fatalf("ParseCPUStat = %+v, %v", got, err)
	}
	for _, c := range []struct{ text, field string }{
		{"cpu0 1 2 3\n", "cpu0"},
		{"cpu0 1 2 3 4 5 6 7 x\n", "cpu0 steal"},
		{"cpuX 1 2 3 4 5 6 7 8\n", "cpuX"},
	} {
		_, err := ParseCPUStat([]byte(c.text))
		refused(t, "ParseCPUStat("+c.text+")", err, c.field)
	}
}

func TestParseSyscall(t *testing.T) {
	s, err := ParseSyscall([]byte("7 0x7ffc5a1b2c30 0x2 0xffffffffffffffff 0x0 0x0 0x0 0x7ffc5a1b2c18 0x7f3e1d2e4b2d\n"))
	if err != nil || !s.InCall || s.Nr != 7 || s.Args[0] != 0x7ffc5a1b2c30 || s.Args[1] != 2 || s.Args[2] != 1<<64-1 {
		t.Fatalf("ParseSyscall = %+v, %v", s, err)
	}
	for line, running := range map[string]bool{"running\n": true, "-1 0x7ffc5a1b2c18 0x7f3e1d2e4b2d\n": false} {
		if s, err := ParseSyscall([]byte(line)); err != nil || s.InCall || s.Running != running {
			t.Errorf("ParseSyscall(%q) = %+v, %v; want not in a call, running %v", line, s, err, running)
		}
	}
	for _, c := range []struct{ line, field string }{
		{"", "empty"}, {"x 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8", "number (field 1)"},
		{"7 0x1 0x2", "fields"}, {"7 0x1 0xg 0x3 0x4 0x5 0x6 0x7 0x8", "argument 2 (field 3)"},
	} {
		_, err := ParseSyscall([]byte(c.line))
		refused(t, "ParseSyscall("+c.line+")", err, c.field)
	}
}

// TestParseWchan: a function name with its compiler suffix cut, "0" as
// not asleep, and a file that holds more than one word refused.
func TestParseWchan(t *testing.T) {
	for in, want := range map[string]string{"poll_schedule_timeout.constprop.0": "poll_schedule_timeout", "io_cqring_wait": "io_cqring_wait", "0": "", "do_epoll_wait\n": "do_epoll_wait"} {
		if got, err := ParseWchan([]byte(in)); got != want || err != nil {
			t.Errorf("ParseWchan(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseWchan([]byte("two words"))
	refused(t, "ParseWchan(two words)", err, "one function name")
}

// A reader's FormatError names the path it read.
func TestReaderNamesThePath(t *testing.T) {
	err := at("/proc/7/stat", bad("stat", "utime (field 14)", "x"))
	if got := err.Error(); got != "/proc/7/stat: utime (field 14): x" {
		t.Errorf("at: %q", got)
	}
	if Dir(Self) != "/proc/self" || Dir(7) != "/proc/7" || TaskDir(7, 8) != "/proc/7/task/8" || FdPath(Self, 3) != "/proc/self/fd/3" {
		t.Error("paths")
	}
}

func TestParseCPUModel(t *testing.T) {
	b := []byte("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: other\n")
	if got := ParseCPUModel(b); got != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
		t.Errorf("got %q", got)
	}
	if got := ParseCPUModel([]byte("processor\t: 0\nBogoMIPS\t: 50.00\n")); got != "" {
		t.Errorf("no model name: got %q", got)
	}
}

func TestSysctlPath(t *testing.T) {
	if got := SysctlPath("net.ipv4.tcp_rmem"); got != "/proc/sys/net/ipv4/tcp_rmem" {
		t.Errorf("got %q", got)
	}
}

// TestSocketInode: a socket's link target gives its inode; any other
// target, or a malformed one, is no socket.
func TestSocketInode(t *testing.T) {
	if ino, ok := (Fd{Target: "socket:[123456]"}).SocketInode(); !ok || ino != 123456 {
		t.Errorf("socket:[123456] = %d, %v; want 123456, true", ino, ok)
	}
	for _, target := range []string{EpollTarget, "/dev/null", "socket:[12", "socket:[x]", "pipe:[7]", ""} {
		if ino, ok := (Fd{Target: target}).SocketInode(); ok {
			t.Errorf("%q = %d, true; want no socket", target, ino)
		}
	}
}

func TestParseIO(t *testing.T) {
	text := "rchar: 4096\nwchar: 12\nsyscr: 800000\nsyscw: 3\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
	got, err := ParseIO([]byte(text))
	if want := (IO{ReadBytes: 4096, WriteBytes: 12, ReadCalls: 800000, WriteCalls: 3}); err != nil || got != want {
		t.Fatalf("ParseIO = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseIO([]byte("read_bytes: 7\n")); err != nil || got != (IO{-1, -1, -1, -1}) {
		t.Errorf("no known lines: %+v, %v", got, err)
	}
	for _, c := range []struct{ text, field string }{
		{"rchar: lots\n", "rchar"}, {"syscr: -4\n", "syscr"}, {"wchar:\n", "wchar"}, {"syscw: 1.5\n", "syscw"},
	} {
		_, err := ParseIO([]byte(c.text))
		refused(t, "ParseIO("+c.text+")", err, c.field)
	}
}
