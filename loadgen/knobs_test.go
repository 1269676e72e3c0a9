package loadgen

import (
	"flag"
	"io"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"
)

// TestKnobs checks the invariants Knob's doc states of every entry of
// Knobs, and that each knob's flag sets its own Config field.
func TestKnobs(t *testing.T) {
	goType := map[Kind]reflect.Type{
		KindInt: reflect.TypeFor[int](), KindUint: reflect.TypeFor[uint64](), KindDuration: reflect.TypeFor[time.Duration](),
		KindFloat: reflect.TypeFor[float64](), KindFraction: reflect.TypeFor[float64](), KindChoice: reflect.TypeFor[string](),
	}
	nameRE := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]bool{}
	fields := map[uintptr]string{}
	var c Config
	base := reflect.ValueOf(&c).Pointer()
	for _, k := range Knobs {
		if !nameRE.MatchString(k.Name) || seen[k.Name] {
			t.Errorf("knob %q: a name of lower-case words joined by '_', once", k.Name)
		}
		seen[k.Name] = true
		want, ok := goType[k.Kind]
		if !ok {
			t.Errorf("knob %s: kind %d unknown", k.Name, k.Kind)
			continue
		}
		p := reflect.ValueOf(k.Field(&c))
		if p.Kind() != reflect.Pointer || p.Type().Elem() != want {
			t.Errorf("knob %s: field %v, want *%v", k.Name, p.Type(), want)
			continue
		}
		off := p.Pointer() - base
		if prev, dup := fields[off]; dup {
			t.Errorf("knobs %s and %s set one field", prev, k.Name)
		}
		fields[off] = k.Name
		if reflect.TypeOf(k.Default) != want {
			t.Errorf("knob %s: default %#v, want a %v", k.Name, k.Default, want)
		}
		if k.Help == "" {
			t.Errorf("knob %s: no help", k.Name)
		}
		if d, _ := k.Default.(string); k.Kind == KindChoice && (len(k.Choices) == 0 || !slices.Contains(k.Choices, d)) {
			t.Errorf("knob %s: default %q not among %q", k.Name, k.Default, k.Choices)
		}
		if r := k.Spec; r != nil && (r.Accepted == "" || (r.Group != GroupTraffic && r.Group != GroupRun) || (k.Kind != KindChoice && r.Min > r.Max)) {
			t.Errorf("knob %s: spec rule %+v", k.Name, *r)
		}
		// The flag sets the knob's field, and only it.
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var got Config
		k.AddFlag(fs, &got, k.Help)
		before := got
		v := map[Kind]string{KindInt: "7", KindUint: "7", KindDuration: "7ms", KindFloat: "7.5", KindFraction: "7%"}[k.Kind]
		if k.Kind == KindChoice && len(k.Choices) > 0 {
			v = k.Choices[len(k.Choices)-1]
		}
		if err := fs.Parse([]string{"--" + k.FlagName() + "=" + v}); err != nil {
			t.Errorf("knob %s: %v", k.Name, err)
			continue
		}
		if reflect.DeepEqual(got, before) {
			t.Errorf("knob %s: --%s=%s changed nothing", k.Name, k.FlagName(), v)
		}
		after := got
		reflect.ValueOf(k.Field(&after)).Elem().Set(reflect.ValueOf(k.Field(&before)).Elem())
		if !reflect.DeepEqual(after, before) {
			t.Errorf("knob %s: its flag set another field", k.Name)
		}
	}
}

// TestKnobSpec pins the spec semantics the table expresses: the words a
// bad value is refused in, the effective values of knobs left out, and
// what a manifest leaves out.
func TestKnobSpec(t *testing.T) {
	for _, tc := range []struct{ knob, v, err string }{
		{"hot", "-1", `"-1" is not a count (accepted: an integer >= 0)`},
		{"rate", "NaN", `"NaN" is not a rate (accepted: a number >= 0 of frames/s)`},
		{"arrivals", "bursty", `"bursty" (accepted: fixed or poisson)`},
		{"control", "0", `"0" is not a number of control connections (accepted: 1..10000; leave it out for 1)`},
		{"control_timeout", "0s", `"0s" is not a timeout (accepted: a duration > 0 with a unit, e.g. 10ms; leave it out for the default 10ms)`},
		{"loadgen_loops", "257", `"257" is not a number of event loops (accepted: 1..256; 0 or left out: one per CPU of the load generator's set)`},
		{"warmup", "-1s", `"-1s" is not a duration (accepted: >= 0 with a unit, e.g. 500us, 2s)`},
		{"loadgen_engine", "io_uring", `"io_uring" (accepted: epoll or uring; leave it out for epoll)`},
	} {
		k, _ := LookupKnob(tc.knob)
		var c Config
		if err := k.ParseSpec(tc.v, &c); err == nil || err.Error() != tc.err {
			t.Errorf("%s %q: %v, want %s", tc.knob, tc.v, err, tc.err)
		}
	}
	var zero Config
	for name, want := range map[string]string{"control": "1", "control_timeout": "10ms", "removal_after": "3", "arrivals": "fixed", "loadgen_loops": "one per CPU", "loadgen_engine": "epoll", "hot": "0"} {
		k, _ := LookupKnob(name)
		var c Config
		if got := k.Text(&c); got != want {
			t.Errorf("%s left out prints %q, want %q", name, got, want)
		}
		if err := k.ParseSpec(want, &c); err == nil && !k.Equal(&c, &zero) {
			t.Errorf("%s: %s is not equal to leaving it out", name, want)
		}
	}
	for _, k := range Knobs {
		if k.Spec == nil {
			continue
		}
		if got, want := k.IsDefault(&zero), k.Spec.OmitDefault; got != want {
			t.Errorf("%s: IsDefault of the zero value %v, want %v", k.Name, got, want)
		}
	}
}
