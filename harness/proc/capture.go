package proc

import "sync"

// capped keeps the first max bytes written to it and counts the rest; it
// never fails a write, so the pipe it drains never fills.
type capped struct {
	mu      sync.Mutex
	max     int
	b       []byte
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := min(len(p), c.max-len(c.b))
	c.b = append(c.b, p[:keep]...)
	c.dropped += int64(len(p) - keep)
	return len(p), nil
}

// bytes returns a copy of what was kept, and whether anything was dropped.
func (c *capped) bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.b...), c.dropped > 0
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max { // compact now and then, not on every write
		t.b = append(t.b[:0:0], t.b[len(t.b)-t.max:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b[max(0, len(t.b)-t.max):])
}
