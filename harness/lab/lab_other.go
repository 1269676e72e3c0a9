//go:build !linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Run fails with errors.ErrUnsupported: the lab and its processes need
// Linux.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	return nil, fmt.Errorf("run: %w", errors.ErrUnsupported)
}

// Check fails with errors.ErrUnsupported (and ErrUnavailable): the
// lab needs Linux.
func Check(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrUnavailable, errors.ErrUnsupported)
}

// Required reports whether REACTORLAB_REQUIRE_LAB=1 says a lab must work
// here; without Linux none can, so a test that needs one then fails.
func Required() (required bool, why string) {
	if os.Getenv(RequireEnv) == "1" {
		return true, RequireEnv + "=1"
	}
	return false, ""
}
