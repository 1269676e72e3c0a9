//go:build !linux

package roles

import (
	"fmt"
	"io"
)

// ServeMain: the reference reactors are epoll reactors, Linux only.
func ServeMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "reactorlab serve: the reference reactors run on Linux only")
	return 1
}
