//go:build linux

package reactors

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSchedRefusedWithoutPrivilege: on a thread without CAP_SYS_NICE (and
// RLIMIT_RTPRIO 0), a real-time class and a negative nice value are
// refused with the errno and the privilege that would grant them, and
// nice 5 (no privilege needed) is applied and read back. The thread drops
// the capability from its own effective set (capabilities are per thread)
// and exits locked, so no thread the process keeps has lost it.
func TestSchedRefusedWithoutPrivilege(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_RTPRIO, &rl); err != nil || rl.Cur > 0 {
		t.Skipf("RLIMIT_RTPRIO is %d (err %v): a real-time class needs no capability here", rl.Cur, err)
	}
	type outcome struct {
		fifo, nice, lowered error
		after               string
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var o outcome
		if err := dropCapability(unix.CAP_SYS_NICE); err != nil {
			o.fifo = err
			done <- o
			return
		}
		o.fifo = applySched(Sched{Class: SchedFIFO, Value: 10})
		o.nice = applySched(Sched{Class: SchedNice, Value: -5})
		o.lowered = applySched(Sched{Class: SchedNice, Value: 5})
		o.after = threadSched()
		done <- o
	}()
	o := <-done
	if !errors.Is(o.fifo, unix.EPERM) || !errors.Is(o.fifo, ErrConfig) || !errors.Is(o.fifo, ErrPrivilege) ||
		!strings.Contains(o.fifo.Error(), "control-sched fifo:10") || !strings.Contains(o.fifo.Error(), "CAP_SYS_NICE or RLIMIT_RTPRIO >= 10") {
		t.Errorf("fifo:10 without CAP_SYS_NICE: %v; want EPERM naming the class and the privilege", o.fifo)
	}
	if !errors.Is(o.nice, unix.EPERM) || !strings.Contains(o.nice.Error(), "RLIMIT_NICE >= 25") {
		t.Errorf("nice:-5 without CAP_SYS_NICE: %v; want EPERM naming RLIMIT_NICE >= 25", o.nice)
	}
	if o.lowered != nil || o.after != "nice:5" {
		t.Errorf("nice:5: %v, then the thread reads %q; want it applied and read back as nice:5", o.lowered, o.after)
	}
}

// dropCapability removes capability c from the calling thread's effective
// set.
func dropCapability(c int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[c/32].Effective &^= 1 << (c % 32)
	return unix.Capset(&hdr, &data[0])
}

// TestParseSched: the accepted forms, and refusals that name the form.
func TestParseSched(t *testing.T) {
	for in, want := range map[string]string{"other": "other", "nice:-20": "nice:-20", "nice:19": "nice:19", "fifo:1": "fifo:1", "rr:99": "rr:99"} {
		s, err := ParseSched(in)
		if err != nil || s.String() != want {
			t.Errorf("ParseSched(%q) = %v, %v; want %s", in, s, err, want)
		}
	}
	for _, in := range []string{"", "fifo", "fifo:0", "fifo:100", "rr:x", "nice:-21", "nice:20", "other:1", "idle", "deadline:1"} {
		if _, err := ParseSched(in); err == nil || !strings.Contains(err.Error(), SchedForms) {
			t.Errorf("ParseSched(%q) = %v; want an error listing the forms", in, err)
		}
	}
	cfg := DefaultConfig()
	cfg.ControlSched = "fifo:0"
	if err := cfg.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "control-sched") {
		t.Errorf("Validate with control-sched fifo:0: %v; want ErrConfig naming control-sched", err)
	}
}
