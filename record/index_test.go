package record

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// indexedRun writes a finished run of two candidates on two tasks, its
// trials out of plan order, one job played twice (--resume), one trial
// with every fact an index keeps, and its index (WriteIndex); it returns
// results.json's path.
func indexedRun(t *testing.T) string {
	t.Helper()
	exit, one, half, mark := 1, 1.0, 0.5, 0.8
	long := strings.Repeat("é", 200) // 400 bytes: the index keeps 300
	rich := Trial{Result: runner.Result{CandidateID: "b", TaskID: "t1", Trial: 1, ExitCode: &exit, Success: true,
		ErrorKind: runner.ErrCandidateFailed, ErrorMessage: long, RuntimeSeconds: 1.5, Output: "not kept", ArtifactBytes: 12,
		ArtifactTruncated: true, OutputTruncated: true, SubmitError: "bad json", Reward: &half, Tampered: []string{"/usr/bin/bash"}},
		Checks: []CheckResult{{Name: "ok", Passed: 2, Of: 2}, {Name: "wrong", Passed: 1, Of: 3, Note: "n",
			Failed: []CheckFailure{{Check: "equals 1", Want: "1", Got: "2"}, {Check: "equals 3", Want: "3", Got: "4"}}}},
		SecretInArtifact: true, Cost: &Cost{USD: 0.25, ModelUSD: 0.2, SandboxUSD: 0.05, Tokens: 99, Unpriced: "gpu"}, Attempts: 2,
		Judges: []JudgeResult{{Name: "fine", Score: &one, Reason: "r"}, {Name: "broke", Error: "timeout"}}, PassMark: &mark, Score: &half}
	plain := func(c, task string, ok bool) Trial {
		return Trial{Result: runner.Result{CandidateID: c, TaskID: task, Trial: 1, Success: ok, RuntimeSeconds: 1}, Score: &one}
	}
	rec := &Record{SchemaVersion: SchemaVersion, RunID: "r", Candidates: []string{"a", "b"}, Trials: 1,
		StartedAt: time.Date(2026, 11, 21, 15, 30, 0, 0, time.UTC), FinishedAt: time.Date(2026, 11, 21, 15, 31, 0, 0, time.UTC),
		Tasks:      []TaskInfo{{ID: "t1", Weight: 1, Difficulty: "hard"}, {ID: "t2", Weight: 2, Category: "c"}},
		Results:    []Trial{plain("a", "t2", false), rich, plain("b", "t2", true), plain("a", "t1", false), plain("a", "t2", true)},
		Standings:  []Standing{{CandidateID: "b", Rank: 1}, {CandidateID: "a", Rank: 2}},
		TaskMatrix: []TaskRow{{TaskID: "t1", Weight: 1, Cells: []TaskCell{{CandidateID: "a", Trials: 1}, {CandidateID: "b", Score: &half, Trials: 1, Passes: 1}}}}}
	path := filepath.Join(t.TempDir(), ResultsFile)
	if err := Write(path, rec); err != nil {
		t.Fatal(err)
	}
	if err := WriteIndex(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// listed is what an index keeps of r: the facts the lists read.
func listed(r Trial) Trial {
	w := Trial{Result: runner.Result{CandidateID: r.CandidateID, TaskID: r.TaskID, Trial: r.Trial, Success: r.Success, ExitCode: r.ExitCode,
		ErrorKind: r.ErrorKind, ErrorMessage: r.ErrorMessage, RuntimeSeconds: r.RuntimeSeconds, ArtifactBytes: r.ArtifactBytes,
		ArtifactTruncated: r.ArtifactTruncated, OutputTruncated: r.OutputTruncated, SubmitError: r.SubmitError, Reward: r.Reward,
		Tampered: r.Tampered}, SecretInArtifact: r.SecretInArtifact, Cost: r.Cost, Attempts: r.Attempts, PassMark: r.PassMark, Score: r.Score}
	w.ErrorMessage = w.ErrorMessage[:min(len(w.ErrorMessage), 300)]
	for _, c := range r.Checks {
		if c.Passed < c.Of {
			c.Failed = c.Failed[:min(1, len(c.Failed))]
			w.Checks = append(w.Checks, c)
		}
	}
	for _, j := range r.Judges {
		if j.Error != "" {
			w.Judges = append(w.Judges, JudgeResult{Name: j.Name, Error: j.Error})
		}
	}
	return w
}

// TestIndexIsTheRecordsTrials: the index written beside a finished run
// holds its trials as Read arranges them (plan order, the last line of a
// job played twice, results.json's scores), each as the lists read it
// (listed), and the record without them.
func TestIndexIsTheRecordsTrials(t *testing.T) {
	path := indexedRun(t)
	rec, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	b, fi, err := ReadStamped(path)
	if err != nil {
		t.Fatal(err)
	}
	x := LoadIndex(path, b, fi)
	if x == nil {
		t.Fatal("no index")
	}
	if len(x.Trials) != len(rec.Results) || len(rec.Results) != 4 {
		t.Fatalf("%d trials indexed, %d read, want 4", len(x.Trials), len(rec.Results))
	}
	lines, err := os.ReadFile(filepath.Join(filepath.Dir(path), TrialsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rec.Results {
		if got, want := x.Trial(i), listed(r); !reflect.DeepEqual(got, want) {
			t.Errorf("trial %d:\n%+v\nwant\n%+v", i+1, got, want)
		}
		it := x.Trials[i]
		var back Trial
		if err := json.Unmarshal(lines[it.Off:it.Off+int64(it.Len)], &back); err != nil || back.CandidateID != r.CandidateID || back.TaskID != r.TaskID || back.Success != r.Success {
			t.Errorf("trial %d: its line is not at %d (%d bytes): %v", i+1, it.Off, it.Len, err)
		}
	}
	head := *rec
	head.Results = nil
	if !reflect.DeepEqual(x.Record, &head) {
		t.Errorf("record\n%+v\nwant\n%+v", x.Record, &head)
	}
}

// TestIndexIsNotTrustedOnceAFileChanged: a byte changed in the trials
// file or results.json, at the same size and modification time, or in the
// index itself, and the index is not loaded; back as they were, it is.
func TestIndexIsNotTrustedOnceAFileChanged(t *testing.T) {
	path := indexedRun(t)
	dir := filepath.Dir(path)
	load := func() *Index {
		b, fi, err := ReadStamped(path)
		if err != nil {
			t.Fatal(err)
		}
		return LoadIndex(path, b, fi)
	}
	// change rewrites name with old replaced by new (the same length),
	// keeping its modification time, and returns how to put it back.
	change := func(name, old, new string) func() {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		fi, serr := os.Stat(p)
		if err != nil || serr != nil || !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s: %v %v, or no %q", name, err, serr, old)
		}
		write := func(b []byte) {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}
		write(bytes.Replace(b, []byte(old), []byte(new), 1))
		return func() { write(b) }
	}
	if load() == nil {
		t.Fatal("no index")
	}
	for _, c := range []struct{ file, old, new string }{
		{TrialsFile, `"bad json"`, `"bad JSON"`}, // the middle line's
		{ResultsFile, `"score":0.5`, `"score":0.7`},
		{IndexFile, "bad json", "bad JSON"},
	} {
		undo := change(c.file, c.old, c.new)
		if load() != nil {
			t.Errorf("%s changed: the index is loaded", c.file)
		}
		undo()
		if load() == nil {
			t.Errorf("%s as it was: no index", c.file)
		}
	}
}

// TestIndexFileCutOrGarbledIsAnError: an index cut anywhere, its checksum
// made right, is refused without a panic.
func TestIndexFileCutOrGarbledIsAnError(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(indexedRun(t)), IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeIndex(b); err != nil {
		t.Fatal(err)
	}
	for n := range len(b) - 4 {
		cut := binary.LittleEndian.AppendUint32(bytes.Clone(b[:n]), crc32.Checksum(b[:n], castagnoli))
		if _, err := decodeIndex(cut); err == nil {
			t.Fatalf("cut at %d of %d: no error", n, len(b)-4)
		}
	}
}

// FuzzDecodeIndex: whatever the bytes, decodeIndex returns an index or
// an error.
func FuzzDecodeIndex(f *testing.F) {
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		// With its checksum right, or the decoder is never reached.
		n := len(indexMagic) + 1
		if len(b) > n {
			b = binary.LittleEndian.AppendUint32(append([]byte(indexMagic), b[n:]...), 0)
			body := b[:len(b)-4]
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, castagnoli))
		}
		decodeIndex(b)
	})
}

// TestIndexKeepsEveryFieldOfTheTasksAndMatrix: a task and a row of the
// matrix with every field set read back whole (a field added to them and
// not to the index's file fails here).
func TestIndexKeepsEveryFieldOfTheTasksAndMatrix(t *testing.T) {
	rec := &Record{Tasks: make([]TaskInfo, 1), TaskMatrix: make([]TaskRow, 1)}
	setAll(reflect.ValueOf(&rec.Tasks[0]).Elem())
	setAll(reflect.ValueOf(&rec.TaskMatrix[0]).Elem())
	e := &codec{}
	if e.record(rec); e.err != nil {
		t.Fatal(e.err)
	}
	d := &codec{reading: true, b: e.b, names: map[string]string{}}
	back := &Record{}
	if d.record(back); d.err != nil || !reflect.DeepEqual(back, rec) {
		t.Errorf("%v\n%+v\nwant\n%+v", d.err, back, rec)
	}
}

// setAll sets every field of v to a value that is not its zero.
func setAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(0.25)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		setAll(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		setAll(v.Index(0))
	case reflect.Struct:
		for i := range v.NumField() {
			setAll(v.Field(i))
		}
	default:
		panic("setAll: " + v.Kind().String())
	}
}
