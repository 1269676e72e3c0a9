//go:build !linux

package conformance

import "errors"

// ServingProcesses needs Linux's inet_diag and /proc.
func ServingProcesses(inst Instance) (serving, group []int, err error) {
	return nil, nil, errors.New("listening sockets are found with Linux's inet_diag")
}

func limitServing(inst Instance, want uint64) (uint64, []int, int, error) {
	return 0, nil, 0, errors.New("a running process's descriptor limit is set with Linux's prlimit")
}
