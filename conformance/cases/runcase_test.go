package cases

import (
	"context"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
)

// runCaseOn runs the catalogue's case id alone on target with opts and
// returns its result, logged with its evidence and log.
func runCaseOn(t *testing.T, id string, target conformance.Target, opts conformance.Options) conformance.Result {
	t.Helper()
	c, ok := Lookup(id)
	if !ok {
		t.Fatalf("no case %s in the catalogue", id)
	}
	results, err := conformance.RunAll(context.Background(), target, []conformance.Case{c}, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	t.Logf("%s %s (%s): %s\n%s\n%s", id, r.Verdict, r.Cause, r.Reason, strings.Join(r.Evidence, "\n"), strings.Join(r.Log, "\n"))
	return r
}
