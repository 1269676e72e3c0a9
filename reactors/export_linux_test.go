//go:build linux

package reactors

// SetBeforeInbandRead makes the loops of a reactor built from cfg call f
// with the connection's fd right before each in-band read of a data
// connection while urgent data is on: a test's hold on the last moment
// an urgent byte can land before such a read.
func SetBeforeInbandRead(cfg *Config, f func(fd int)) { cfg.beforeInbandRead = f }
