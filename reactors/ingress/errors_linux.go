//go:build linux

package ingress

import "errors"

// ErrCapacity is returned by [New], wrapped with the offending value, when the
// requested capacity is not in 1..[MaxCapacity].
var ErrCapacity = errors.New("ingress: capacity out of range")
