//go:build linux

package lab

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// compareSnapshots names every kind of difference a run may not cause, and
// nothing else: the table covers each kind, one at a time.
func TestCompareSnapshots(t *testing.T) {
	base := Snapshot{
		Fds:         map[int]string{0: "/dev/null", 1: "pipe:[1]", 2: "pipe:[1]", 3: "anon_inode:[eventpoll]"},
		Processes:   []string{"100 (sleep) start=5"},
		Links:       []string{"1:lo", "2:eth0"},
		ThreadNetns: []string{"net:[4026531833]"},
		ThreadCPUs:  []string{"0-1"},
	}
	cases := []struct {
		name string
		edit func(before, after *Snapshot)
		want []string // one diff each, in this order
	}{
		{"identical", func(b, a *Snapshot) {}, nil},
		{"descriptor opened", func(b, a *Snapshot) { a.Fds[7] = "socket:[42]" },
			[]string{"descriptor 7 (socket:[42]) was opened during the run and is still open"}},
		{"descriptor reused for another file", func(b, a *Snapshot) { a.Fds[3] = "net:[4026532200]" },
			[]string{"descriptor 3 (net:[4026532200]) was opened during the run and is still open"}},
		{"descriptor closed", func(b, a *Snapshot) { delete(a.Fds, 3) }, nil}, // closing what was open is no leak
		{"process left running", func(b, a *Snapshot) { a.Processes = append(a.Processes, "200 (echo) start=9") },
			[]string{"process 200 (echo) start=9, a descendant of this one, is still running"}},
		{"pid reused by another process", func(b, a *Snapshot) { a.Processes = []string{"100 (sleep) start=77"} },
			[]string{"process 100 (sleep) start=77, a descendant of this one, is still running"}},
		{"process gone", func(b, a *Snapshot) { a.Processes = nil }, nil},
		{"host link appeared", func(b, a *Snapshot) { a.Links = append(a.Links, "3:rl-server") },
			[]string{"host link 3:rl-server appeared"}},
		{"host link disappeared", func(b, a *Snapshot) { a.Links = a.Links[:1] },
			[]string{"host link 2:eth0 disappeared"}},
		{"host link renumbered", func(b, a *Snapshot) { a.Links = []string{"1:lo", "5:eth0"} },
			[]string{"host link 5:eth0 appeared", "host link 2:eth0 disappeared"}},
		{"thread left in a namespace", func(b, a *Snapshot) { a.ThreadNetns = append(a.ThreadNetns, "net:[4026532300]") },
			[]string{"a thread of this process is in network namespace net:[4026532300], where none was before the run"}},
		{"thread left on a mask", func(b, a *Snapshot) { a.ThreadCPUs = append(a.ThreadCPUs, "1") },
			[]string{"a thread of this process is pinned to CPUs 1, where none was before the run"}},
		{"every kind at once", func(b, a *Snapshot) {
			a.Fds[9] = "pipe:[3]"
			a.Processes = append(a.Processes, "300 (x) start=1")
			a.Links = []string{"1:lo", "4:dummy"}
			a.ThreadNetns = []string{"net:[1]"}
			a.ThreadCPUs = []string{"0"}
		}, []string{
			"descriptor 9", "process 300 (x)", "host link 4:dummy appeared", "host link 2:eth0 disappeared",
			"network namespace net:[1]", "pinned to CPUs 0",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, after := cloneSnapshot(base), cloneSnapshot(base)
			c.edit(&before, &after)
			got := compareSnapshots(before, after)
			if len(got) != len(c.want) {
				t.Fatalf("diffs %q, want %d: %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("diff %d is %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func cloneSnapshot(s Snapshot) Snapshot {
	c := s
	c.Fds = map[int]string{}
	for k, v := range s.Fds {
		c.Fds[k] = v
	}
	c.Processes = slices.Clone(s.Processes)
	c.Links = slices.Clone(s.Links)
	c.ThreadNetns = slices.Clone(s.ThreadNetns)
	c.ThreadCPUs = slices.Clone(s.ThreadCPUs)
	return c
}

// TestHostLinksWatchesTheLabsNames: the host-link audit looks at the names
// the lab gives its veth ends, and not at links of other tenants.
func TestHostLinksWatchesTheLabsNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("adding a link to the host's namespace takes root")
	}
	other := "rlother" + strconv.Itoa(os.Getpid())
	addTestLink(t, other)
	links, err := hostLinks()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasSuffix(l, ":"+other) || strings.HasSuffix(l, ":"+other+"p") {
			t.Errorf("hostLinks lists another tenant's link %s", l)
		}
	}
	// The lab's own names are watched (a veth created in the wrong
	// namespace would appear under them). Not by planting them here: a
	// concurrent lab run of another test binary would see them appear.
	if w := watchedLinks(); !slices.Contains(w, serverLink) || !slices.Contains(w, clientLink) {
		t.Errorf("watched links %v lack the lab's %s and %s", w, serverLink, clientLink)
	}
}
