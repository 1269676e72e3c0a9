//go:build !linux

package roles

import (
	"fmt"
	"io"
)

// LoadgenMain: the load generator is Linux only.
func LoadgenMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "reactorlab loadgen: Linux only")
	return 1
}
