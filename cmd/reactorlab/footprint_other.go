//go:build !linux

package main

import (
	"io"

	"github.com/reactorlab/reactorlab/internal/cli"
)

// footprintCmd: the measurement reads /proc and needs Linux. Its help
// still says what it does.
func footprintCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab footprint", footprintSynopsis, footprintDescription)
	c.Flags.String("target", "", "`DESIGN|cmd:COMMAND` to measure")
	c.Flags.Int("conns", 10000, "idle connections to open")
	c.Flags.Duration("timeout", 0, "bound on the whole measurement")
	c.Flags.Duration("start-timeout", 0, "bound on the target's start")
	c.Flags.String("json", "", "also write the result as JSON to `FILE` (- for stdout alone)")
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	return c.Errorf(stderr, cli.ExitFail, "runs on Linux only (it reads /proc)")
}
