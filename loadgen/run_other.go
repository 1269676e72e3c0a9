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

// EngineAvailable reports that no engine runs here: the load generator
// needs Linux (errors.ErrUnsupported); an unknown engine wraps ErrConfig.
func EngineAvailable(engine string) error {
	switch engine {
	case EngineEpoll, EngineUring, "":
		return fmt.Errorf("loadgen: the %s engine needs Linux: %w", engine, errors.ErrUnsupported)
	}
	return fmt.Errorf("%w: loadgen-engine = %q (accepted: %s or %s)", ErrConfig, engine, EngineEpoll, EngineUring)
}
