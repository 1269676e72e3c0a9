//go:build !linux

package main

import (
	"context"
	"io"

	"github.com/reactorlab/reactorlab/internal/cli"
)

// diagnoseTarget: the targets conform starts, and /proc, are Linux's.
func diagnoseTarget(ctx context.Context, c *cli.Command, f *diagnoseFlags, stdout, stderr io.Writer) int {
	return c.Errorf(stderr, cli.ExitUsage, "--target runs on Linux only")
}
