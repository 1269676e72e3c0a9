//go:build !linux

package main

import (
	"fmt"
	"io"
)

// The matrix runs in the lab, on Linux only; so do its companions here.
func matrixCmd(args []string, stdout, stderr io.Writer) int  { return linuxOnly("matrix", stderr) }
func mergeCmd(args []string, stdout, stderr io.Writer) int   { return linuxOnly("merge", stderr) }
func reportCmd(args []string, stdout, stderr io.Writer) int  { return linuxOnly("report", stderr) }
func compareCmd(args []string, stdout, stderr io.Writer) int { return linuxOnly("compare", stderr) }

func linuxOnly(cmd string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "reactorlab %s: runs on Linux only\n", cmd)
	return 1
}
