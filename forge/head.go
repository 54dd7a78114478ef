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
	head, err := skipResults(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return nil, err
	}
	rec, err := DecodeRecord(head)
	if rec != nil {
		rec.Results = nil
	}
	return rec, err
}

// skipResults returns the record rd holds with an empty results array.
func skipResults(rd *bufio.Reader) ([]byte, error) {
	var head []byte
	in := false // inside the results array
	for {
		line, err := readLine(rd, !in)
		switch {
		case in:
			if t := bytes.TrimRight(line, "\r\n"); bytes.Equal(t, []byte("  ]")) || bytes.Equal(t, []byte("  ],")) {
				head = append(head, "  \"results\": []"...)
				head = append(head, line[3:]...)
				in = false
			}
		case bytes.HasPrefix(line, []byte(`  "results": [`)) && !bytes.Contains(line, []byte("]")):
			in = true
		default:
			head = append(head, line...)
		}
		if errors.Is(err, io.EOF) {
			return head, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine reads the next line with its newline; a line it need not keep
// is read through but only its first bytes returned.
func readLine(rd *bufio.Reader, keep bool) ([]byte, error) {
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		if keep || len(line) < 8 {
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
