//go:build !linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
)

// Run needs Linux (epoll, timerfd, eventfd): elsewhere it validates cfg and
// returns an error wrapping errors.ErrUnsupported.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("loadgen: the load generator needs Linux: %w", errors.ErrUnsupported)
}
