//go:build linux

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunChurnAndLeadFlags: run's help lists the churn and hot-lead
// flags, and what the load generator refuses of them is refused before
// anything runs, in its words.
func TestRunChurnAndLeadFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run --help: exit %d, stderr %s", code, stderr.String())
	}
	for _, name := range []string{"--churn-rate", "--churn-burst", "--churn-max", "--hot-lead"} {
		if !strings.Contains(stdout.String(), name) {
			t.Errorf("run --help does not list %s", name)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--churn-rate", "1e6"}, []string{"churn-rate = 1e+06", "(0, 100000]"}},
		{[]string{"--churn-burst", "4"}, []string{"churn-burst = 4", "0 without churn-rate"}},
		{[]string{"--churn-rate", "100", "--churn-burst", "8", "--churn-max", "4"}, []string{"churn-max = 4", ">= churn-burst = 8"}},
		{[]string{"--hot-lead", "1m"}, []string{"hot-lead = 1m0s", "(0, 10s]"}},
		{[]string{"--hot", "0", "--churn-rate", "100", "--hot-lead", "1s"}, []string{"hot-lead = 1s without hot sources"}},
		{[]string{"--hot-lead", "3"}, []string{`--hot-lead "3": not a duration`}},
	} {
		args := append([]string{"run", "--reactor", "lt", "--out", filepath.Join(t.TempDir(), "cell")}, tc.args...)
		msg := refusal(t, time.Second, args...)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: %q does not say %q", tc.args, msg, w)
			}
		}
	}
}
