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
	f, err := openRecord(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := DecodeRecordHead(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// openRecord opens the results.json at path, with ReadRecord's errors.
func openRecord(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, recordFileError(path, err)
	}
	return f, nil
}

// recordFileError says why the results.json at path could not be opened
// or read: missing, or err.
func recordFileError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file", path)
	}
	return fmt.Errorf("read %s: %w", path, err)
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
	rec, _, err := scanRecord(r, each, false)
	return rec, err
}

// ReadRecordSummary reads what a list of runs says of the run whose
// results.json is path: ReadRecordHead's record without its tasks and task
// matrix either (a suite of 25,000 tasks writes 25,000 lines of each), and
// the number of its tasks; its errors are ReadRecordHead's.
func ReadRecordSummary(path string) (*Record, int, error) {
	f, err := openRecord(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	rec, tasks, err := DecodeRecordSummary(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return rec, tasks, nil
}

// DecodeRecordSummary reads a results.json from r as ReadRecordSummary
// does. A record not written one task a line (before schema 3) is read
// again from the start as DecodeRecordHead reads it.
func DecodeRecordSummary(r io.ReadSeeker) (*Record, int, error) {
	rec, tasks, err := scanRecord(r, nil, true)
	if !errors.Is(err, errNotOneALine) {
		return rec, tasks, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	if rec, err = DecodeRecordHead(r); err != nil {
		return nil, 0, err
	}
	tasks = len(rec.Tasks)
	rec.Tasks, rec.TaskMatrix = nil, nil
	return rec, tasks, nil
}

// errNotOneALine says that a record's tasks are not one a line.
var errNotOneALine = errors.New("the tasks are not written one a line")

// scanRecord is ScanRecord; lean, it also skips the tasks and the task
// matrix and counts the tasks (ReadRecordSummary).
func scanRecord(r io.Reader, each func(off int64, line []byte) error, lean bool) (*Record, int, error) {
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
	skipping := ""    // lean: the key of the array being skipped ("tasks", "task_matrix")
	count := 0        // lean: the tasks
	for {
		line, n, err := readLine(rd, state != skip && skipping != "task_matrix")
		start := off
		off += int64(n)
		t := bytes.TrimRight(line, "\r\n")
		switch {
		case skipping != "" && closes(t):
			head = emptied(head, skipping, line) // dropped below
			skipping = ""
		case skipping == "tasks":
			if _, ok := oneLineObject(t); !ok {
				return nil, 0, errNotOneALine
			}
			count++
		case skipping != "":
		case lean && (state == before || state == after) && opens(t, "tasks"):
			skipping = "tasks"
		case lean && (state == before || state == after) && opens(t, "task_matrix"):
			skipping = "task_matrix"
		case state == before && bytes.HasPrefix(t, []byte(`  "results": [`)) && !bytes.HasSuffix(bytes.TrimRight(t, ","), []byte("]")):
			state = skip
			if each != nil {
				state = lines
			}
		case (state == lines || state == skip || state == whole) && closes(t):
			if state == whole {
				head = append(head, line...)
				indented = true
			} else {
				head = emptied(head, "results", line)
			}
			state = after
		case state == lines:
			if body, ok := oneLineObject(t); !ok {
				// Not one result a line: the record is read whole.
				state = whole
				head = append(head, "  \"results\": [\n"...)
				head = append(head, line...)
			} else if cerr := each(start+int64(bytes.IndexByte(line, '{')), body); cerr != nil {
				return nil, 0, cerr
			}
		case state == skip:
		default:
			head = append(head, line...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if skipping != "" {
		return nil, 0, errNotOneALine // cut short: let the whole read say how
	}
	rec, err := DecodeRecord(head)
	if err != nil {
		return nil, 0, err
	}
	if !indented {
		rec.Results = nil
	}
	if lean {
		rec.Tasks, rec.TaskMatrix = nil, nil
	}
	return rec, count, nil
}

// opens reports whether line t opens the top-level member key's array and
// leaves it open (its elements on the lines that follow).
func opens(t []byte, key string) bool {
	rest, ok := bytes.CutPrefix(t, []byte(`  "`+key+`": [`))
	return ok && len(rest) == 0
}

// closes reports whether line t closes a top-level member's array: "  ]",
// with a comma when a member follows.
func closes(t []byte) bool {
	return bytes.Equal(t, []byte("  ]")) || bytes.Equal(t, []byte("  ],"))
}

// oneLineObject returns the JSON object line t holds whole, without its
// indentation and comma, and whether it does.
func oneLineObject(t []byte) ([]byte, bool) {
	body := bytes.TrimSuffix(bytes.TrimSpace(t), []byte(","))
	return body, len(body) >= 2 && body[0] == '{' && body[len(body)-1] == '}'
}

// emptied appends to head the member key as an empty array in place of the
// array whose closing line (closes) is closing, keeping its comma and
// newline.
func emptied(head []byte, key string, closing []byte) []byte {
	head = append(head, `  "`+key+`": []`...)
	return append(head, closing[3:]...)
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
