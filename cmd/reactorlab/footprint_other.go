//go:build !linux

package main

import (
	"fmt"
	"io"
)

// footprintCmd: the measurement reads /proc and needs Linux.
func footprintCmd(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "reactorlab footprint runs on Linux only")
	return 1
}
