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
func Run(ctx context.Context, spec LabSpec) (*LabResult, error) {
	return nil, fmt.Errorf("run: %w", errors.ErrUnsupported)
}

// CheckLab fails with errors.ErrUnsupported (and ErrLabUnavailable): the
// lab needs Linux.
func CheckLab(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrLabUnavailable, errors.ErrUnsupported)
}

// LabRequired reports whether REACTORLAB_REQUIRE_LAB=1 says a lab must work
// here; without Linux none can, so a test that needs one then fails.
func LabRequired() (required bool, why string) {
	if os.Getenv(RequireLabEnv) == "1" {
		return true, RequireLabEnv + "=1"
	}
	return false, ""
}
