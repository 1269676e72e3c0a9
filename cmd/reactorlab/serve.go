package main

import (
	"io"

	"github.com/reactorlab/reactorlab/harness/roles"
)

// serve is `reactorlab serve`; the harness owns it because it also runs it
// as a role inside the lab.
func serve(args []string, stdout, stderr io.Writer) int {
	return roles.ServeMain(args, stdout, stderr)
}
