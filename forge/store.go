package forge

// What a run writes in its directory: each job's files and its line in
// the journal as it ends, and results.json: its head (the run, no
// results) as the run starts, the whole record at the end.

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/forge-run/forge/runner"
)

// jobDir is <run>/<candidate>[/<task>][/trial-N]: the task in a suite,
// the trial when there are several.
func (s *state) jobDir(job runner.Job) string {
	return jobRelDir(job.CandidateID, job.TaskID, job.Trial, s.o.Plan.Trials)
}

// jobRelDir is the directory of a job's files, relative to its run's, in
// a run of trials trials.
func jobRelDir(candidate, task string, trial, trials int) string {
	dir := filepath.Join(candidate, task)
	if trials > 1 {
		dir = filepath.Join(dir, "trial-"+strconv.Itoa(trial))
	}
	return dir
}

// taskFile is the name under which store keeps a suite's task beside the
// job's logs, and transcriptFile the candidate's transcript
// (FORGE_TRANSCRIPT).
const (
	taskFile       = "task.json"
	transcriptFile = "transcript.jsonl"
)

// store writes the job's logs, its task, its transcript and its artifact
// beside results.json.
func (s *state) store(job runner.Job, res *runner.Result) error {
	rel := s.jobDir(job)
	abs := filepath.Join(s.dir, rel)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("store results of %s: %w", job.Name(), err)
	}
	if err := writeJobFile(filepath.Join(abs, "stdout.log"), []byte(res.Output)); err != nil {
		return err
	}
	if err := writeJobFile(filepath.Join(abs, "stderr.log"), []byte(res.Stderr)); err != nil {
		return err
	}
	res.OutputPath = filepath.ToSlash(filepath.Join(rel, "stdout.log"))
	res.StderrPath = filepath.ToSlash(filepath.Join(rel, "stderr.log"))
	for _, f := range job.Files {
		if f.Dst == runner.TaskFile {
			if err := writeJobFile(filepath.Join(abs, taskFile), f.Data); err != nil {
				return err
			}
		}
	}
	if res.Transcript != nil {
		if err := writeJobFile(filepath.Join(abs, transcriptFile), res.Transcript); err != nil {
			return err
		}
		res.TranscriptPath = filepath.ToSlash(filepath.Join(rel, transcriptFile))
	}
	if res.Artifact != nil {
		name := filepath.Base(filepath.FromSlash(job.EffectiveOutputFile()))
		if name == "stdout.log" || name == "stderr.log" || name == taskFile || name == transcriptFile {
			name = "artifact-" + name
		}
		if err := writeJobFile(filepath.Join(abs, name), res.Artifact); err != nil {
			return err
		}
		res.ArtifactPath = filepath.ToSlash(filepath.Join(rel, name))
	}
	return nil
}

// writeJobFile writes one of a job's files (its logs, its artifact) in the
// job's own directory, plainly: nothing reads them before the journal
// names the job, and a job that the journal does not name is run again by
// --resume, which writes them anew. A file already there is removed first,
// never written over: a merged run (forge merge) may hold a link to it.
func writeJobFile(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file and a rename,
// so readers never see half a file.
func writeFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic writes what write writes to path through a temporary file
// and a rename, so readers never see half a file.
func WriteAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	werr := write(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// JournalFile is the name of a run's journal: one line of JSON per
// finished job, its result before scoring, appended as the job ends. A
// job played again (--resume) has a later line, which wins. results.json
// is written from what the journal holds once the run ends; until then
// (and after a crash) ReadRecord reads the journal with it.
const JournalFile = "journal.jsonl"

// journal appends one job's result to the run's journal in a single
// write, so that a run killed at any moment keeps every job that had
// finished. The run keeps no result in memory while it plays: only where
// each job's line is (a span), read back once every job has ended.
type journal struct {
	mu   sync.Mutex
	f    *os.File
	size int64 // the file's length: where the next line goes
}

// span is where a job's line is in the journal; n is 0 for a job that
// has none.
type span struct {
	off int64
	n   int32
}

// openJournal opens dir's journal for appending; fresh, it first holds
// the results in keep (a resumed run's finished jobs, however the run
// before kept them), whose lines are at the returned spans.
func openJournal(dir string, keep []*runner.Result) (*journal, []span, error) {
	path := filepath.Join(dir, JournalFile)
	var size int64
	spans := make([]span, len(keep))
	// Streamed: the kept results of a 100,000-job run are about 100 MB of
	// lines, never held whole. Each is written unscored (scored again with
	// the rest), without changing the record it comes from.
	err := WriteAtomic(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		for i, r := range keep {
			unscored := *r
			unscored.Score = nil
			line, err := json.Marshal(&unscored)
			if err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			spans[i] = span{size, int32(len(line) + 1)}
			size += int64(len(line) + 1)
			bw.Write(line)
			bw.WriteByte('\n')
		}
		return bw.Flush()
	})
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	return &journal{f: f, size: size}, spans, nil
}

// add appends r's line and says where it is.
func (j *journal) add(r *runner.Result) (span, error) {
	line, err := json.Marshal(r)
	if err != nil {
		return span{}, fmt.Errorf("journal: %w", err)
	}
	line = append(line, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	n, err := j.f.Write(line)
	at := j.size
	j.size += int64(n)
	if err != nil {
		return span{}, fmt.Errorf("journal: %w", err)
	}
	return span{at, int32(len(line))}, nil
}

// window reads a journal's lines back through a window of the file: a
// run reads them in plan order, which is nearly the order they were
// written in, so most lines are in the window the last read filled — one
// read of the file a window, not one a line (100,000 of them at the end of
// a 100,000-job run). Each goroutine has its own.
type window struct {
	j   *journal
	buf []byte
	off int64 // where buf starts in the file
}

// windowSize is how much of the journal a window reads at once.
const windowSize = 1 << 20

// line returns the line at sp, without its newline, valid until the next
// call.
func (w *window) line(sp span) ([]byte, error) {
	end := sp.off + int64(sp.n)
	if sp.off < w.off || end > w.off+int64(len(w.buf)) {
		size := max(windowSize, int(sp.n))
		w.buf = slices.Grow(w.buf[:0], size)[:size]
		n, err := w.j.f.ReadAt(w.buf, sp.off)
		if n < int(sp.n) {
			return nil, fmt.Errorf("journal: read back %d bytes at %d: %w", sp.n, sp.off, cmp.Or(err, io.ErrUnexpectedEOF))
		}
		w.buf, w.off = w.buf[:n], sp.off
	}
	return w.buf[sp.off-w.off : end-w.off-1], nil
}

// read decodes the result whose line is at sp into r.
func (w *window) read(sp span, r any) error {
	line, err := w.line(sp)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(line, r); err != nil {
		return fmt.Errorf("journal: read back the line at %d: %w", sp.off, err)
	}
	return nil
}

// unscored is how a journal's line, written before scoring, ends its
// result's own keys: the score, null, then the two keys Result.MarshalJSON
// puts last (strings, which hold no unescaped quote, so the last match is
// the result's own score and not a key of its submitted JSON).
var unscored = []byte(`,"score":null,"sandbox_id":`)

// writeScored writes line, a result's line in the journal, to w as the
// JSON of that result with score: the bytes json.Marshal would write for
// it once scored, without encoding the result again. It reports false,
// writing nothing, when line does not end as unscored says.
func writeScored(w *bufio.Writer, line []byte, score *float64) (bool, error) {
	i := bytes.LastIndex(line, unscored)
	if i < 0 {
		return false, nil
	}
	if score == nil {
		_, err := w.Write(line)
		return true, err
	}
	v, err := json.Marshal(*score)
	if err != nil {
		return false, nil
	}
	w.Write(line[:i])
	w.WriteString(`,"score":`)
	w.Write(v)
	_, err = w.Write(line[i+len(`,"score":null`):])
	return true, err
}

func (j *journal) close() error { return j.f.Close() }

// readJournal reads a run's journal: each job's last line, in the order
// of first appearance. A last line cut short (the run was killed while
// writing it) is not a job that finished; any other line that is not a
// result is an error naming it.
func readJournal(path string) ([]runner.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type key struct {
		id, task string
		trial    int
	}
	at := map[key]int{}
	var out []runner.Result
	rd := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var r runner.Result
			if jerr := json.Unmarshal(line, &r); jerr != nil {
				return nil, fmt.Errorf("%s:%d: not a result: %w", path, n, jerr)
			}
			k := key{r.CandidateID, r.TaskID, r.Trial}
			if i, ok := at[k]; ok {
				out[i] = r
			} else {
				at[k] = len(out)
				out = append(out, r)
			}
			continue
		}
		switch {
		case errors.Is(err, io.EOF):
			return out, nil // a torn last line, or none
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
}
