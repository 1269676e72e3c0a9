//go:build !linux

package harness

import (
	"context"
	"errors"
	"fmt"
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
