package mask

import (
	"errors"
	"io"
)

// The streaming masker.

// ErrClosed is returned by a Writer's Write after Close.
var ErrClosed = errors.New("mask: write to closed Writer")

// Writer returns a Writer that masks what is written to it and writes the
// result to w. Close it at the end of the stream to write what it holds
// back; Close does not close w. With an empty Masker, writes go straight
// to w.
func (m *Masker) Writer(w io.Writer) *Writer {
	return &Writer{m: m, w: w}
}

// A Writer masks a stream; see Masker.Writer. It must be used from one
// goroutine at a time.
type Writer struct {
	m *Masker
	w io.Writer

	state   uint32 // the automaton's state after the bytes so far
	end     int64  // number of bytes written to the Writer so far
	emitted int64  // input bytes before this are accounted for in the output
	maskEnd int64  // end of the last Mask written, if it ends at emitted
	pend    []span // runs to mask not yet written, after emitted
	tail    []byte // input bytes [tailAt, end), held back
	tailAt  int64  // w.emitted when the last Write ended
	out     []byte // output buffer, kept between writes
	err     error  // sticky error from w
	closed  bool
}

// Write masks p and writes to the underlying writer all of the masked
// stream that can no longer change, holding back the end of p when it may
// begin a secret. It returns len(p) and nil, or 0 and the underlying
// writer's error (then the Writer is broken: later calls return the same
// error), or ErrClosed after Close.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, ErrClosed
	}
	m := w.m
	if m.empty() {
		n, err := w.w.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		w.err = err
		return n, err
	}
	base := w.end
	delta, class, s := m.delta, &m.class, w.state
	for i, c := range p {
		t := delta[s+class[c]]
		s = t &^ matchFlag
		if t&matchFlag != 0 {
			end := base + int64(i) + 1
			w.add(end-int64(m.outLen[s/m.nc]), end)
		}
	}
	w.state = s
	w.end += int64(len(p))
	// No occurrence still to come starts before safe.
	safe := w.end - int64(m.depth[s/m.nc])
	if err := w.flush(p, base, safe); err != nil {
		return 0, err
	}
	return len(p), nil
}

// add records the occurrence [a, b).
func (w *Writer) add(a, b int64) {
	if a < w.maskEnd {
		// It overlaps the Mask written last, which now stands for it too,
		// and for the pending runs, which all lie within [a, b).
		w.pend = w.pend[:0]
		w.maskEnd, w.emitted = b, b
		return
	}
	w.pend = mergeSpan(w.pend, a, b)
}

// flush writes the output for the input before safe, and for the pending
// runs that start at or before it (as no occurrence to come can start
// before safe, these can only grow at their end, which add handles), and
// keeps the rest of the input in w.tail. p is the input just written, from
// position base; w.tail holds the input from w.tailAt to base.
func (w *Writer) flush(p []byte, base, safe int64) error {
	tailStart := w.tailAt
	var out []byte
	if (len(w.pend) == 0 || w.pend[0].start > safe) && w.emitted >= base {
		// Nothing to mask now, nothing held from before: no copy.
		if w.emitted < safe {
			out = p[w.emitted-base : safe-base]
			w.emitted = safe
		}
	} else {
		out = w.out[:0]
		span := func(a, b int64) {
			if a < base {
				hi := min(b, base)
				out = append(out, w.tail[a-tailStart:hi-tailStart]...)
				a = hi
			}
			if a < b {
				out = append(out, p[a-base:b-base]...)
			}
		}
		j := 0
		for ; j < len(w.pend) && w.pend[j].start <= safe; j++ {
			sp := w.pend[j]
			span(w.emitted, sp.start)
			out = append(out, Mask...)
			w.emitted, w.maskEnd = sp.end, sp.end
		}
		w.pend = w.pend[:copy(w.pend, w.pend[j:])]
		if w.emitted < safe {
			span(w.emitted, safe)
			w.emitted = safe
		}
		if cap(out) <= 64<<10 {
			w.out = out
		} else {
			w.out = nil
		}
	}
	// Keep the input from w.emitted on.
	if w.emitted >= base {
		w.tail = append(w.tail[:0], p[w.emitted-base:]...)
	} else {
		n := copy(w.tail, w.tail[w.emitted-tailStart:])
		w.tail = append(w.tail[:n], p...)
	}
	w.tailAt = w.emitted
	if len(out) == 0 {
		return nil
	}
	n, err := w.w.Write(out)
	if err == nil && n < len(out) {
		err = io.ErrShortWrite
	}
	w.err = err
	return err
}

// Close writes what the Writer holds back, masked, and ends the stream:
// later writes fail with ErrClosed. It does not close the underlying
// writer. Closing again does nothing and returns the same result.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil || w.m.empty() {
		return w.err
	}
	return w.flush(nil, w.end, w.end)
}

var _ io.WriteCloser = (*Writer)(nil)
