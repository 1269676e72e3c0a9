package cases

import (
	"strings"
	"testing"
)

// A count of wakeups beyond idle is never said as a negative number: a
// server whose threads woke less while the connections arrived than idle
// (a spin) is told as such.
func TestUnseenWakeupsNeverNegative(t *testing.T) {
	if got := unseenWakeups("the server's threads", 400, 394); strings.Contains(got, "-6") || !strings.Contains(got, "fewer times") {
		t.Errorf("unseenWakeups(idle 400, conns 394) = %q: a negative count, or the reason unsaid", got)
	}
	if got := unseenWakeups("the loops", 10, 40); !strings.Contains(got, "only 30 times beyond idle") {
		t.Errorf("unseenWakeups(idle 10, conns 40) = %q", got)
	}
}
