package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
)

const window = 2 * time.Second

// thread is a loop thread's figures with nothing unknown: no CPU, no
// switches, no reads, 200 samples all in its epoll wait on set 5, 10
// looks that found nothing.
func thread() Thread {
	return Thread{Tid: 7, Samples: 200, InWait: 200, InCall: map[string]int{}, WaitCalls: map[string]int{"epoll_wait on 5": 200}, WaitTimeouts: map[string]string{"epoll_wait on 5": "-1 ms"},
		EpollFd: 5, Looks: 10}
}

func ms(n int) jsontime.Seconds { return jsontime.Seconds(time.Duration(n) * time.Millisecond) }

// named lists the signals of th's evidence that held, by name.
func named(th Thread) []string {
	var out []string
	for _, e := range th.Evidence {
		if rest, ok := strings.CutPrefix(e, "signal ("); ok {
			out = append(out, rest[:strings.Index(rest, ")")])
		}
	}
	return out
}

// TestClassify: each class from the figures its rule names, and the
// figures one short of it in the class below.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name    string
		edit    func(*Thread)
		want    Class
		signals []string
	}{
		{"idle", func(*Thread) {}, Waiting, nil},
		{"a little CPU, under a tenth of the window", func(th *Thread) { th.Run = ms(199) }, Waiting, nil},
		{"serving: blocks between rounds", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1200), 26000, 15000, 80, 120
			th.ReadCalls, th.ReadBytes = 160000, 1<<30
		}, Serving, nil},
		{"saturated: waits that did not block, nothing else", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 30, 700, 0, 200
			th.ReadCalls, th.ReadBytes = 400000, 1<<31
		}, Serving, nil},
		{"read spin: waits that did not block and reads that returned nothing", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(900), 300, 70, 0, 90
			th.ReadCalls, th.ReadBytes = 2_000_000, 0
		}, Spinning, []string{"waits that did not block", "reads that returned nothing"}},
		{"write interest spin", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 60, 12, 0, 200
			th.IdleWriteLooks, th.MostIdleWrite = 10, 1
		}, Spinning, []string{"waits that did not block", "write interest with nothing to send"}},
		{"write interest in under half the looks is no signal", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 60, 12, 0, 200
			th.IdleWriteLooks = 4
		}, Serving, nil},
		{"accept spin at a full table", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 60, 12, 0, 200
			th.FullTableLooks, th.FullTable = 5, &FullTable{Listener: "127.0.0.1:9000", Queued: 3, Open: 64, Limit: 64}
		}, Spinning, []string{"waits that did not block", "accept failing for want of descriptors"}},
		{"a full table in under half the looks is no signal", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 60, 12, 0, 200
			th.FullTableLooks, th.FullTable = 4, &FullTable{Listener: "127.0.0.1:9000", Queued: 3, Open: 64, Limit: 64}
		}, Serving, nil},
		{"readable and never read", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 60, 12, 3, 197
			th.NeverReadLooks, th.NeverRead = 9, &NeverRead{Socket: "127.0.0.1:9000→127.0.0.1:41000", Fd: 8, Unread: 4096}
		}, Spinning, []string{"waits that did not block", "readable and never read"}},
		{"readable and never read in under half the looks is no signal", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 60, 12, 3, 197
			th.NeverReadLooks, th.NeverRead = 4, &NeverRead{Socket: "127.0.0.1:9000→127.0.0.1:41000", Fd: 8, Unread: 4096}
		}, Serving, nil},
		{"readable and never read, but its waits blocked", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait, th.Running = ms(300), 5000, 150, 50
			th.NeverReadLooks, th.NeverRead = 9, &NeverRead{Socket: "127.0.0.1:9000→127.0.0.1:41000", Fd: 8, Unread: 4096}
		}, Serving, nil},
		{"empty reads, but fewer than the floor of calls", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(1990), 60, 12, 0, 200
			th.ReadCalls, th.ReadBytes = 999, 0
		}, Serving, nil},
		{"two signals, but under a tenth of the window's CPU", func(th *Thread) {
			th.Run, th.Voluntary, th.Involuntary, th.InWait = ms(150), 0, 40, 0
			th.ReadCalls, th.ReadBytes, th.IdleWriteLooks = 50000, 0, 10
		}, Waiting, nil},
		{"blocked in nanosleep while bytes wait", func(th *Thread) {
			th.InWait, th.InCall["nanosleep"], th.UnreadLooks, th.Voluntary = 45, 155, 10, 30
		}, Blocked, []string{"held in nanosleep", "work waited"}},
		{"in futex while bytes wait, but woken thousands of times", func(th *Thread) {
			th.Run, th.RunqWait, th.InWait, th.InCall["futex"], th.UnreadLooks, th.Voluntary = ms(100), ms(90), 12, 142, 5, 4451
		}, Waiting, nil},
		{"in futex while bytes wait, a block a stay of 10 ms", func(th *Thread) {
			th.InWait, th.InCall["futex"], th.UnreadLooks, th.Voluntary = 100, 100, 5, 100
		}, Blocked, []string{"held in futex", "work waited"}},
		{"in futex while bytes wait, a block a stay just under 10 ms", func(th *Thread) {
			th.InWait, th.InCall["futex"], th.UnreadLooks, th.Voluntary = 100, 100, 5, 101
		}, Waiting, nil},
		{"in futex long while bytes wait, but a busy thread may have served the set", func(th *Thread) {
			th.InWait, th.InCall["futex"], th.UnreadLooks, th.Voluntary, th.BusySharers = 12, 180, 6, 35, 1
		}, Waiting, nil},
		{"parked in futex with nothing waiting is waiting", func(th *Thread) {
			th.InWait, th.InCall["futex"] = 5, 195
		}, Waiting, nil},
		{"in a write in state D", func(th *Thread) {
			th.InWait, th.InCall["write"], th.StateD = 100, 100, 100
		}, Blocked, []string{"held in write", "uninterruptible"}},
		{"in a call while one socket held bytes in under half the looks", func(th *Thread) {
			th.InWait, th.InCall["futex"], th.UnreadLooks = 12, 120, 4
		}, Waiting, nil},
		{"in a call a third of the samples less one", func(th *Thread) {
			th.InWait, th.InCall["nanosleep"], th.UnreadLooks = 134, 66, 10
		}, Waiting, nil},
		{"starved", func(th *Thread) {
			th.Run, th.RunqWait, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(500), ms(1500), 60, 400, 0, 200
		}, Starved, []string{"run-queue wait"}},
		{"run-queue wait under its run time", func(th *Thread) {
			th.Run, th.RunqWait, th.Voluntary, th.InWait, th.Running = ms(1000), ms(999), 9000, 100, 100
		}, Serving, nil},
		{"run-queue wait over its run time but under a tenth of the window", func(th *Thread) { th.Run, th.RunqWait = ms(50), ms(150) }, Waiting, nil},
		{"waking itself: woken for nothing by its own threads' tokens", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait = ms(90), 20000, 190
			th.TokenFds, th.TokenWrites, th.TokenWriters = []string{"eventfd 4"}, 20500, 1
		}, WakingItself, []string{"woken for nothing", "tokens from its own threads"}},
		{"woken often, but parked in futex in most of its blocked samples (a runtime's worker)", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait, th.InCall["futex"] = ms(28), 2292, 8, 155
			th.TokenFds, th.TokenWrites, th.TokenWriters = []string{"eventfd 9"}, 5249, 3
		}, Waiting, nil},
		{"preempted more than it blocked, busy, seen in its wait in a third of the samples", func(th *Thread) {
			th.Run, th.RunqWait, th.Voluntary, th.Involuntary, th.InWait, th.Running = ms(645), ms(600), 801, 9114, 62, 106
			th.IdleWriteLooks, th.MostIdleWrite = 6, 1
		}, Serving, nil},
		{"woken for nothing, but no token written (a timer's loop)", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait = ms(60), 2000, 195
		}, Waiting, nil},
		{"woken by tokens, but no more than twice a segment", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait, th.Segments = ms(90), 20000, 190, 10000
			th.TokenFds, th.TokenWrites, th.TokenWriters = []string{"eventfd 4"}, 20500, 1
		}, Waiting, nil},
		{"woken for nothing, under the floor of wakeups", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait = ms(9), 999, 199
			th.TokenFds, th.TokenWrites, th.TokenWriters = []string{"pipe 4"}, 999, 1
		}, Waiting, nil},
		{"woken for nothing, token writes under half the wakeups", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait = ms(90), 20000, 190
			th.TokenFds, th.TokenWrites, th.TokenWriters = []string{"eventfd 4"}, 9999, 1
		}, Waiting, nil},
		{"woken for nothing, tokens written, but no eventfd nor pipe in its set", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait = ms(90), 20000, 190
			th.TokenWrites, th.TokenWriters = 20500, 1
		}, Waiting, nil},
		{"segments unknown: no signal", func(th *Thread) {
			th.Run, th.Voluntary, th.InWait, th.Segments = ms(90), 20000, 190, -1
			th.TokenFds, th.TokenWrites, th.TokenWriters = []string{"eventfd 4"}, 20500, 1
		}, Waiting, nil},
		{"starved to under a tenth of the window's CPU", func(th *Thread) {
			th.Run, th.RunqWait, th.InWait, th.Running = ms(150), ms(1800), 0, 200
		}, Starved, []string{"run-queue wait"}},
	} {
		th := thread()
		c.edit(&th)
		Classify(&th, window)
		got := named(th)
		if th.Class != c.want || strings.Join(got, ",") != strings.Join(c.signals, ",") {
			t.Errorf("%s: %s with signals %q; want %s with %q\n%s", c.name, th.Class, got, c.want, c.signals, strings.Join(th.Evidence, "\n"))
		}
	}
}

// TestClassifySaysWhatItCouldNotRead: counts that could not be read are
// said, and give no signal.
func TestClassifySaysWhatItCouldNotRead(t *testing.T) {
	th := thread()
	th.Run, th.RunqWait, th.Voluntary, th.Involuntary, th.ReadCalls, th.ReadBytes = ms(1990), -1, -1, -1, -1, -1
	th.InWait, th.Running = 20, 180
	th.Unreadable = []string{"io: permission denied"}
	Classify(&th, window)
	ev := strings.Join(th.Evidence, "\n")
	if th.Class != Serving || !strings.Contains(ev, "switches: unknown") || !strings.Contains(ev, "reads: unknown") || !strings.Contains(ev, "not read: io: permission denied") {
		t.Errorf("%s:\n%s", th.Class, ev)
	}
}

// TestMethodStatesEveryRule: the method line names every class's rule
// with its figures.
func TestMethodStatesEveryRule(t *testing.T) {
	m := Method()
	for _, want := range []string{"io_uring_enter, and poll resumed by restart_syscall, known by its wait channel", "spinning: ran ≥ 10% of the window AND at least two of", "1/10 of the samples", "2.5ms of CPU", "≥ 1000 read calls",
		"≥ 1/2 of ≥ 3 looks", "zero timeout never sleeps", "(readable and never read) one connection of its epoll set", "none read between them (tcpi_bytes_received less the receive queue unchanged)",
		"waking itself: both of: (woken for nothing) ≥ 1000 wakeups from its event wait in the window", "AND more than 2 per segment", "averaged ≤ 8 bytes", "≥ one write per 2 of those wakeups", "blocked: in one system call other than its wait in ≥ 1/3 of the samples, for ≥ 10ms a block", "starved: its run-queue wait ≥ its run time AND ≥ 10%", "serving: ran ≥ 10%"} {
		if !strings.Contains(m, want) {
			t.Errorf("method lacks %q:\n%s", want, m)
		}
	}
}
