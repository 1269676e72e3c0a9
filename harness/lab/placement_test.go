package lab

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestParsePlacement: the placement's command-line form — lists, ranges,
// counts, none, a side's list continued past its commas — read back from
// its String, with the single-CPU form as it always was.
func TestParsePlacement(t *testing.T) {
	good := []struct {
		in, text string
		want     Placement
	}{
		{"", "server=none,loadgen=none", Unpinned},
		{"none", "server=none,loadgen=none", Unpinned},
		{"server=0,loadgen=1", "server=0,loadgen=1", Placement{ListPlacement(0), ListPlacement(1)}},
		{" server = 3 , client = 2 ", "server=3,loadgen=2", Placement{ListPlacement(3), ListPlacement(2)}},
		{"loadgen=1", "server=none,loadgen=1", Placement{Client: ListPlacement(1)}},
		{"server=none,loadgen=0", "server=none,loadgen=0", Placement{Client: ListPlacement(0)}},
		{"server=-1,loadgen=0", "server=none,loadgen=0", Placement{Client: ListPlacement(0)}},
		{"server=0-3,8,loadgen=4-7", "server=0-3,8,loadgen=4-7", Placement{ListPlacement(0, 1, 2, 3, 8), ListPlacement(4, 5, 6, 7)}},
		{"loadgen=5,4,server=1", "server=1,loadgen=4-5", Placement{ListPlacement(1), ListPlacement(4, 5)}},
		{"server=count:4,loadgen=count:2", "server=count:4,loadgen=count:2", Placement{CountPlacement(4), CountPlacement(2)}},
	}
	for _, g := range good {
		got, err := ParsePlacement(g.in)
		if err != nil || !got.Equal(g.want) || got.String() != g.text {
			t.Errorf("ParsePlacement(%q) = %v, %v; want %v", g.in, got, err, g.text)
			continue
		}
		back, err := ParsePlacement(got.String())
		if err != nil || !back.Equal(got) {
			t.Errorf("%q does not read back: %v, %v", got.String(), back, err)
		}
	}
	bad := []struct{ in, want string }{
		{"server", `"server": want side=LIST`},
		{"server=", `"server=": want side=LIST`},
		{",server=0", `"": want side=LIST`},
		{"reactor=0", `unknown side "reactor"`},
		{"server=x", `server: "x": "x": want a CPU number`},
		{"loadgen=-2", `loadgen: "-2": "-2": want a CPU number`},
		{"server=99999", `server: "99999": "99999": want a CPU number (0..1023)`},
		{"server=3-1", "a range is written low-high"},
		{"server=0,0", "server: \"0,0\": CPU 0 is given twice"},
		{"server=0-2,1", "CPU 1 is given twice"},
		{"server=count:0", `server: "count:0": want count:N`},
		{"server=count:x", `"count:x": want count:N`},
		{"server=0,server=1", "server given twice"},
		{"client=0,loadgen=1", "loadgen given twice"},
	}
	for _, b := range bad {
		_, err := ParsePlacement(b.in)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParsePlacement(%q) error %v, want one containing %q", b.in, err, b.want)
		}
	}
	var c Placement
	if err := c.Set("server=1,loadgen=0"); err != nil || !c.Equal(Placement{ListPlacement(1), ListPlacement(0)}) {
		t.Errorf("Set: %v, %v", c, err)
	}
}

// TestResolvePlacement: counts take the first allowed CPUs the other side has
// not; a CPU outside the allowed set, sides that overlap and a count too
// large are refused, naming the side, the CPU and the allowed list.
func TestResolvePlacement(t *testing.T) {
	allowed := []int{0, 1, 2, 3, 8, 9}
	good := []struct{ in, want string }{
		{"server=0,loadgen=1", "server=0,loadgen=1"},
		{"none", "server=none,loadgen=none"},
		{"server=count:2,loadgen=count:3", "server=0-1,loadgen=2-3,8"},
		{"server=1,loadgen=count:2", "server=1,loadgen=0,2"},
		{"server=count:1,loadgen=0-1", "server=2,loadgen=0-1"},
		{"server=8-9,loadgen=count:4", "server=8-9,loadgen=0-3"},
		{"server=count:6", "server=0-3,8-9,loadgen=none"},
	}
	for _, g := range good {
		c, err := ParsePlacement(g.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Resolve(allowed)
		if err != nil || got.String() != g.want {
			t.Errorf("Resolve(%s) = %v, %v; want %s", g.in, got, err, g.want)
		}
		if got.Server.Count() != 0 || got.Client.Count() != 0 {
			t.Errorf("Resolve(%s) left a count: %v", g.in, got)
		}
	}
	bad := []struct{ in, want string }{
		{"server=0,loadgen=0", "cpus server=0,loadgen=0: both sides on CPU 0: the two measured sides never share a CPU"},
		{"server=0-2,loadgen=2-3", "CPU 2 is in both the server's set and the loadgen's"},
		{"server=4,loadgen=0", "server: CPU 4 is not one this process may use (0-3,8-9)"},
		{"server=0,loadgen=1-5", "loadgen: CPU 4 is not one this process may use (0-3,8-9)"},
		{"server=count:4,loadgen=count:3", "loadgen: count:3, but only 2 of the CPUs this process may use (0-3,8-9) are left to it: the placement needs 7 CPUs (server 4, loadgen 3), this process may use 6"},
		{"server=count:7", "server: count:7, but only 6"},
	}
	for _, b := range bad {
		c, err := ParsePlacement(b.in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Resolve(allowed); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Resolve(%s): %v, want an error with %q", b.in, err, b.want)
		}
	}
	if _, err := (Placement{ListPlacement(1), ListPlacement(1)}).Resolve(allowed); !errors.Is(err, errOverlap) {
		t.Errorf("an overlap's error %v does not wrap errOverlap", err)
	}
}

// TestDefaultPlacement: one CPU each on two, half each above (the odd one to
// the load generator), unpinned below two.
func TestDefaultPlacement(t *testing.T) {
	seq := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	for _, tc := range []struct {
		allowed []int
		want    string
	}{
		{seq(1), "server=none,loadgen=none"},
		{seq(2), "server=0,loadgen=1"},
		{[]int{2, 5}, "server=2,loadgen=5"},
		{seq(3), "server=0,loadgen=1-2"},
		{seq(16), "server=0-7,loadgen=8-15"},
	} {
		if got := DefaultPlacement(tc.allowed).String(); got != tc.want {
			t.Errorf("DefaultPlacement(%v) = %s, want %s", tc.allowed, got, tc.want)
		}
	}
}

// TestPlacementJSON: a single CPU is written as its number and unpinned as -1,
// as records were before sets (so old summary.json files read), a set as
// its list; every form reads back.
func TestPlacementJSON(t *testing.T) {
	for _, tc := range []struct {
		c    Placement
		json string
	}{
		{Placement{ListPlacement(0), ListPlacement(1)}, `{"server":0,"client":1}`},
		{Unpinned, `{"server":-1,"client":-1}`},
		{Placement{ListPlacement(0, 1, 2, 3, 8), CountPlacement(2)}, `{"server":"0-3,8","client":"count:2"}`},
	} {
		b, err := json.Marshal(tc.c)
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tc.c, b, err, tc.json)
		}
		var back Placement
		if err := json.Unmarshal(b, &back); err != nil || !back.Equal(tc.c) {
			t.Errorf("Unmarshal(%s) = %v, %v", b, back, err)
		}
	}
	var c Placement
	for _, in := range []string{`{"server":-2}`, `{"server":1024}`, `{"server":"0-"}`, `{"server":true}`} {
		if err := json.Unmarshal([]byte(in), &c); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %v", in, c)
		}
	}
}
