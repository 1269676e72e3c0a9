package reactors_test

import (
	"flag"
	"reflect"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
)

// Args must reproduce a configuration through Flags and ParseFault: the
// process conformance target depends on it.
func TestArgsRoundTrip(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Listen = "{addr}"
	cfg.Budgets.ClockEvery = 4
	cfg.Callback = "fixed:200µs"
	cfg.Timer = reactors.TimerDeadline
	cfg.Wait = reactors.WaitBlock
	cfg.AppTimer = time.Millisecond
	cfg.Workers = 2
	for _, name := range reactors.FaultNames {
		if name == "missed-rearm[:every=N]" {
			name = "missed-rearm:every=3"
		}
		if err := reactors.ParseFault(name, &cfg.Faults); err != nil {
			t.Fatal(err)
		}
	}
	args := cfg.Args()
	got := reactors.DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	got.Flags(fs)
	var faults []string
	fs.Func("fault", "", func(s string) error { faults = append(faults, s); return nil })
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	for _, f := range faults {
		if err := reactors.ParseFault(f, &got.Faults); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Fatalf("Args %q\nround trip: %+v\nwant:       %+v", args, got, cfg)
	}
	if def := reactors.DefaultConfig().Args(); len(def) != 0 {
		t.Fatalf("DefaultConfig().Args() = %q, want none", def)
	}
}
