//go:build !linux

package diagnose

import (
	"context"
	"errors"
)

// Observe reads Linux's /proc: elsewhere it refuses.
func Observe(ctx context.Context, pid int, opt Options) (Report, error) {
	return Report{}, errors.New("diagnose reads Linux's /proc: Linux only")
}
