//go:build linux

package myloop_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"

	"example.com/myloop"
)

// TestConformance runs reactorlab's catalogue on the loop, in this test's
// process (conformance.GoServer): go test -v prints a subtest per case,
// named by its id and its claim, and a line counting the verdicts; go
// test -run 'TestConformance/W2' runs one case. With -short it runs the
// cases that take well under a second on a loop like this one.
func TestConformance(t *testing.T) {
	run := cases.Catalogue()
	if testing.Short() {
		var err error
		if run, err = cases.Select([]string{"F", "R", "W2", "M1", "M2"}); err != nil {
			t.Fatal(err)
		}
	}
	conformance.Run(t, conformance.GoServer{Label: "myloop", Serve: myloop.Serve}, run)
}
