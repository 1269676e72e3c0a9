package target

import (
	"strings"
	"testing"
)

// Parse reads back what String writes, keeps a command as written, and
// names the bad input and what is accepted in every error.
func TestParse(t *testing.T) {
	designs := []string{"lt", "et"}
	for _, tc := range []struct {
		in      string
		want    Spec
		wantErr []string // each in the error; nil: no error
	}{
		{"lt", Design("lt"), nil},
		{"cmd:./srv --port {addr}", Command("./srv --port {addr}"), nil},
		{"cmd: ./srv ", Command(" ./srv "), nil},
		{"cmd:lt", Command("lt"), nil},
		{"", Spec{}, []string{"no target", "lt, et, cmd:'COMMAND'"}},
		{"nginx", Spec{}, []string{`"nginx"`, "lt, et, cmd:'COMMAND'"}},
		{"LT", Spec{}, []string{`"LT"`, "lt, et"}},
		{"cmd:", Spec{}, []string{`"cmd:"`, "needs a command"}},
		{"cmd:   ", Spec{}, []string{`"cmd:   "`, "needs a command"}},
	} {
		got, err := Parse(tc.in, designs)
		if tc.wantErr == nil {
			if err != nil || got != tc.want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
				continue
			}
			if back, err := Parse(got.String(), designs); err != nil || back != got {
				t.Errorf("Parse(%q).String() = %q reads back as %+v, %v", tc.in, got.String(), back, err)
			}
			continue
		}
		if err == nil || !got.IsZero() {
			t.Errorf("Parse(%q) = %+v, %v; want an error", tc.in, got, err)
			continue
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q): %q does not say %q", tc.in, err, w)
			}
		}
	}
}

func TestSpecString(t *testing.T) {
	type name string // a registry's own name type, as reactors.DesignName is
	for _, tc := range []struct {
		s                   Spec
		want                string
		isCommand, isDesign bool
	}{
		{Design("prio-thread"), "prio-thread", false, true},
		{Design(name("lt")), "lt", false, true},
		{Command("./srv {addr}"), "cmd:./srv {addr}", true, false},
		{Spec{}, "", false, false},
		{Design(""), "", false, false},
		{Command(""), "", false, false},
	} {
		if got := tc.s.String(); got != tc.want || tc.s.IsCommand() != tc.isCommand || tc.s.IsDesign() != tc.isDesign {
			t.Errorf("%+v: String %q, IsCommand %v, IsDesign %v; want %q, %v, %v", tc.s, got, tc.s.IsCommand(), tc.s.IsDesign(), tc.want, tc.isCommand, tc.isDesign)
		}
		if tc.s.IsZero() != (tc.want == "") {
			t.Errorf("%+v: IsZero %v", tc.s, tc.s.IsZero())
		}
	}
}
