//go:build !linux

package main

import (
	"fmt"
	"io"
)

// serve: the reference reactors are epoll reactors, Linux only.
func serve(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "reactorlab serve: the reference reactors run on Linux only")
	return 1
}
