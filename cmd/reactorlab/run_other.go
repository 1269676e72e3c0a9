//go:build !linux

package main

import (
	"fmt"
	"io"
)

// runCell: the lab and the load generator are Linux only.
func runCell(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "reactorlab run: the lab and the load generator run on Linux only")
	return 1
}
