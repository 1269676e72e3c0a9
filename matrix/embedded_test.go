package matrix

import (
	"strings"
	"testing"
	"time"
)

// TestEmbeddedSuites parses every built-in suite and checks the time each
// promises: quick about 3 minutes, nightly under 45 on 2 cores.
func TestEmbeddedSuites(t *testing.T) {
	bounds := map[string]time.Duration{"quick": 4 * time.Minute, "nightly": 45 * time.Minute}
	seen := map[string]bool{}
	for _, e := range EmbeddedSuites() {
		text, err := EmbeddedText(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		specs, err := ParseSuite([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		est := Estimate(specs, Shard{})
		t.Logf("%s: %d specs, about %v", e.Name, len(specs), est.Round(time.Second))
		if b, ok := bounds[e.Name]; ok && est > b {
			t.Errorf("%s: estimated %v, over its bound %v", e.Name, est, b)
		}
		seen[e.Name] = true
	}
	for _, name := range []string{"quick", "design-notes", "priority", "nightly"} {
		if !seen[name] {
			t.Errorf("no embedded suite %q", name)
		}
	}
	if _, err := EmbeddedText("nope"); err == nil || !strings.Contains(err.Error(), "accepted: quick") {
		t.Errorf("unknown suite: %v", err)
	}
}
