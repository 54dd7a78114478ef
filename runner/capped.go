package runner

import "sync"

// CappedBuffer is an io.Writer that keeps the first Max bytes and counts but
// drops the rest, so a candidate printing gigabytes costs forge no memory.
// It is safe for concurrent use.
type CappedBuffer struct {
	Max int64

	mu    sync.Mutex
	buf   []byte
	total int64
}

// Write keeps what fits and reports all of p written, so the pipe keeps draining.
func (c *CappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.Max - int64(len(c.buf)); room > 0 {
		c.buf = append(c.buf, p[:min(room, int64(len(p)))]...)
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (c *CappedBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// String returns what was kept.
func (c *CappedBuffer) String() string { return string(c.Bytes()) }

// Total is how many bytes were written, kept or not.
func (c *CappedBuffer) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Truncated reports whether anything was dropped.
func (c *CappedBuffer) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total > int64(len(c.buf))
}
