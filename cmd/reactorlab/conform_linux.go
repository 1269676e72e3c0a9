//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// conformTarget turns --target (and --fault, --in-process) into a target.
func conformTarget(spec string, faultSpecs []string, inProcess bool, grace time.Duration) (conformance.Target, error) {
	if command, ok := strings.CutPrefix(spec, "cmd:"); ok {
		if strings.TrimSpace(command) == "" {
			return nil, errors.New("--target cmd: needs a command, e.g. --target cmd:'./server --port {addr}'")
		}
		if len(faultSpecs) > 0 || inProcess {
			return nil, errors.New("--fault and --in-process apply to reference targets only, not to cmd: targets")
		}
		return conformance.Command{Argv: []string{"/bin/sh", "-c", command}, Grace: grace}, nil
	}
	if spec == "" {
		return nil, errors.New("--target is required (accepted: lt, et, oneshot, prio, prio-thread, cmd:'COMMAND')")
	}
	design, err := reactors.ParseDesign(spec)
	if err != nil {
		return nil, fmt.Errorf("--target: %w (or cmd:'COMMAND')", err)
	}
	cfg := reactors.DefaultConfig()
	for _, f := range faultSpecs {
		if err := reactors.ParseFault(f, &cfg.Faults); err != nil {
			return nil, fmt.Errorf("--fault: %w", err)
		}
	}
	if inProcess {
		return conformance.InProcess{Design: design, Config: &cfg}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable to run reference reactors: %w", err)
	}
	return conformance.Process{Design: design, Config: &cfg, Command: []string{exe}}, nil
}
