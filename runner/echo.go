package runner

import (
	"bytes"
	"strings"
	"sync"
)

// maxEchoLine cuts very long lines when echoing.
const maxEchoLine = 4 << 10

// EchoWriter passes each complete line written to it to Echo (--verbose),
// at most Max bytes, then says once that the rest is not shown; lines over
// 4 KiB are cut. It is safe for concurrent use.
type EchoWriter struct {
	Stream string
	Echo   func(stream, line string)
	Max    int64

	mu      sync.Mutex
	partial []byte
	seen    int64
	stopped bool
}

// Write echoes the complete lines in p, keeps a trailing partial one and
// reports all of p written.
func (w *EchoWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if w.stopped || w.Echo == nil {
		return n, nil
	}
	if w.Max > 0 && w.seen+int64(len(p)) > w.Max {
		p = p[:max(0, w.Max-w.seen)]
		w.stopped = true
	}
	w.seen += int64(len(p))
	for len(p) > 0 {
		line, rest, whole := bytes.Cut(p, []byte("\n"))
		w.partial = append(w.partial, line[:min(len(line), maxEchoLine-len(w.partial))]...)
		if !whole {
			break
		}
		w.emit()
		p = rest
	}
	if w.stopped {
		w.emit()
		w.Echo(w.Stream, "… (output cap reached; the rest is not shown)")
	}
	return n, nil
}

// Close echoes a last line that had no newline.
func (w *EchoWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.emit()
	}
	return nil
}

func (w *EchoWriter) emit() {
	if len(w.partial) > 0 && w.Echo != nil {
		w.Echo(w.Stream, strings.ToValidUTF8(strings.TrimRight(string(w.partial), "\r"), "\uFFFD"))
	}
	w.partial = w.partial[:0]
}
