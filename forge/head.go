package forge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadRecordHead reads a run's results.json without its results: what
// lists of runs need (the run's id, start, backend, standings, winner),
// read in a fraction of the time and memory of the whole record, which is
// about 100 MB at 100,000 trials. Its Results are nil, and it does not
// read the journal; its errors are ReadRecord's.
//
// The results are skipped by their indentation: results.json is indented
// two spaces a level (EncodeRecord, and json.MarshalIndent before it), so
// the results array, a member of the top-level object, ends at the first
// line after its key that is "  ]" (everything in it is indented deeper).
func ReadRecordHead(path string) (*Record, error) {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such file", path)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	rec, err := DecodeRecordHead(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// DecodeRecordHead reads a results.json from r as DecodeRecord does, but
// without its results (ReadRecordHead).
func DecodeRecordHead(r io.Reader) (*Record, error) {
	return ScanRecord(r, nil)
}

// ScanRecord reads a results.json from r without holding its results: it
// returns the record without them and hands each result's line to each,
// with the line's offset in r (and its length: the JSON object alone,
// without the indentation, comma or newline around it), in order; the
// line is valid only until each returns (it is not copied). forge
// writes one result a line (EncodeRecord); a record an older forge wrote
// indented whole comes back with its Results decoded instead (each is not
// called). With each nil, the results are skipped whatever their shape.
//
// The results end at the first line after their key that is "  ]":
// results.json is indented two spaces a level and the results array is a
// member of the top-level object, so everything in it is indented deeper.
func ScanRecord(r io.Reader, each func(off int64, line []byte) error) (*Record, error) {
	rd := bufio.NewReaderSize(r, 64<<10)
	var head []byte
	var off int64
	const (
		before = iota // the results' key not yet seen
		lines         // in the results, one a line
		skip          // in the results, skipping them
		whole         // in the results, indented: kept for the decoder
		after
	)
	state := before
	indented := false // the results were kept whole
	for {
		line, n, err := readLine(rd, state != skip)
		start := off
		off += int64(n)
		t := bytes.TrimRight(line, "\r\n")
		switch {
		case state == before && bytes.HasPrefix(t, []byte(`  "results": [`)) && !bytes.HasSuffix(bytes.TrimRight(t, ","), []byte("]")):
			state = skip
			if each != nil {
				state = lines
			}
		case (state == lines || state == skip || state == whole) && (bytes.Equal(t, []byte("  ]")) || bytes.Equal(t, []byte("  ],"))):
			if state == whole {
				head = append(head, line...)
				indented = true
			} else {
				head = append(head, "  \"results\": []"...)
				head = append(head, line[3:]...)
			}
			state = after
		case state == lines:
			body := bytes.TrimSpace(t)
			body = bytes.TrimSuffix(body, []byte(","))
			if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
				// Not one result a line: the record is read whole.
				state = whole
				head = append(head, "  \"results\": [\n"...)
				head = append(head, line...)
			} else if cerr := each(start+int64(bytes.IndexByte(line, '{')), body); cerr != nil {
				return nil, cerr
			}
		case state == skip:
		default:
			head = append(head, line...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	rec, err := DecodeRecord(head)
	if err != nil {
		return nil, err
	}
	if !indented {
		rec.Results = nil
	}
	return rec, nil
}

// readLine reads the next line with its newline, and its length; a line
// it need not keep is read through but only its start returned. The line
// is rd's buffer when it fits there (valid until the next read), a copy
// otherwise.
func readLine(rd *bufio.Reader, keep bool) ([]byte, int, error) {
	chunk, err := rd.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return chunk, len(chunk), err
	}
	line := append([]byte(nil), chunk...)
	n := len(chunk)
	for {
		chunk, err := rd.ReadSlice('\n')
		n += len(chunk)
		if keep || len(line) < 8 {
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, n, err
		}
	}
}
