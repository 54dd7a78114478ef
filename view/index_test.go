package view

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/testkit/relaid"
	"github.com/forge-run/forge/record"
)

// indexedRun is a finished run of alpha and beta, three trials each
// (alpha fails all three, beta its first), with its index as forge run
// leaves it; it returns the run's directory. Its record names no
// candidates: its plan order is trial by trial (alpha#1, beta#1, …).
func indexedRun(t *testing.T, out string) string {
	t.Helper()
	_, dir := makeRun(t, out, spec{id: "r", candidates: []string{"alpha", "beta"}, trials: 3, files: true, start: t0})
	must(t, record.WriteIndex(filepath.Join(dir, record.ResultsFile)))
	return dir
}

// rewrite replaces the first old in the file at path with new, the same
// length, keeping its modification time: only its content says it changed.
func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	fi, err := os.Stat(path)
	must(t, err)
	if len(old) != len(new) || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s: no %q, or %q is not as long", path, old, new)
	}
	must(t, os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644))
	must(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
}

// TestIndexIsWrittenOnceThenRead: the first open of a run without an
// index writes it; a later viewer reads it and leaves it be.
func TestIndexIsWrittenOnceThenRead(t *testing.T) {
	out := t.TempDir()
	_, dir := makeRun(t, out, spec{id: "r", candidates: []string{"alpha", "beta"}, trials: 3, start: t0})
	index := filepath.Join(dir, record.IndexFile)
	if _, err := os.Stat(index); err == nil {
		t.Fatal("an index before the first open")
	}
	_, _, first := get(t, serve(t, Options{Out: out}), "/run/r")
	fi, err := os.Stat(index)
	if err != nil {
		t.Fatalf("no index after the first open: %v", err)
	}
	must(t, os.Chtimes(index, fi.ModTime().Add(-3600e9), fi.ModTime().Add(-3600e9)))
	_, _, second := get(t, serve(t, Options{Out: out}), "/run/r")
	if again, err := os.Stat(index); err != nil || !again.ModTime().Equal(fi.ModTime().Add(-3600e9)) {
		t.Errorf("the index was written again (%v)", err)
	}
	if first != second {
		t.Errorf("the page read from the index differs from the page that made it")
	}
}

// TestIndexOfChangedTrialsIsNotTrusted: a trial's line changed after the
// index was written (the same size, the same modification time) shows
// its new content; so does a score changed in results.json.
func TestIndexOfChangedTrialsIsNotTrusted(t *testing.T) {
	out := t.TempDir()
	dir := indexedRun(t, out)
	rewrite(t, filepath.Join(dir, record.TrialsFile), "alpha broke on", "alpha BROKE ON")
	_, _, body := get(t, serve(t, Options{Out: out}), "/run/r")
	wantIn(t, body, "alpha BROKE ON")
	row := `beta#2</a></td><td><span class="pill ok">ok</span></td><td class="num">`
	wantIn(t, body, row+"1.00</td>")
	rewrite(t, filepath.Join(dir, record.ResultsFile), `"candidate_id":"beta","trial":2,"score":1`, `"candidate_id":"beta","trial":2,"score":0`)
	_, _, body = get(t, serve(t, Options{Out: out}), "/run/r")
	wantIn(t, body, row+"0.00</td>")
}

// TestIndexOfRelaidTrials: the trials file laid out again after the index
// was written (keys sorted): each trial's page is its own.
func TestIndexOfRelaidTrials(t *testing.T) {
	out := t.TempDir()
	dir := indexedRun(t, out)
	must(t, relaid.Lines(filepath.Join(dir, record.TrialsFile)))
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/r")
	if n := strings.Count(body, "/run/r/trial/"); n != 6 {
		t.Errorf("%d trials listed, want 6", n)
	}
	for i, name := range []string{"alpha#1", "beta#1", "alpha#2", "beta#2", "alpha#3", "beta#3"} {
		if code, _, body := get(t, ts, "/run/r/trial/"+strconv.Itoa(i+1)); code != 200 || !strings.Contains(body, "<h1>"+name) {
			t.Errorf("trial %d: %d, not %s's page: %.300s", i+1, code, name, body)
		}
	}
}

// TestTrialPageChecksItsLine: two trials' lines swapped under an open
// viewer (the same size and modification time: its index looks current)
// and each trial's page is still its own.
func TestTrialPageChecksItsLine(t *testing.T) {
	out := t.TempDir()
	dir := indexedRun(t, out)
	ts := serve(t, Options{Out: out})
	get(t, ts, "/run/r")
	path := filepath.Join(dir, record.TrialsFile)
	b, err := os.ReadFile(path)
	must(t, err)
	fi, err := os.Stat(path)
	must(t, err)
	lines := bytes.SplitAfter(b, []byte("\n"))
	i, j := 1, 2 // alpha#2 and alpha#3: as long as each other
	if len(lines[i]) != len(lines[j]) {
		t.Fatalf("lines %d and %d differ in length", i+1, j+1)
	}
	lines[i], lines[j] = lines[j], lines[i]
	must(t, os.WriteFile(path, bytes.Join(lines, nil), 0o644))
	must(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
	for n, name := range map[int]string{3: "alpha#2", 5: "alpha#3"} {
		if code, _, body := get(t, ts, "/run/r/trial/"+strconv.Itoa(n)); code != 200 || !strings.Contains(body, "<h1>"+name) {
			t.Errorf("trial %d: %d, not %s's page: %.300s", n, code, name, body)
		}
	}
}

// TestIndexThatCannotBeWritten: a run whose index cannot be written is
// shown all the same, from an index kept in memory.
func TestIndexThatCannotBeWritten(t *testing.T) {
	out := t.TempDir()
	_, dir := makeRun(t, out, spec{id: "r", candidates: []string{"alpha", "beta"}, trials: 3, files: true, start: t0})
	must(t, os.Mkdir(filepath.Join(dir, record.IndexFile), 0o755)) // neither a file to read nor one to replace
	ts := serve(t, Options{Out: out})
	if code, _, body := get(t, ts, "/run/r"); code != 200 || strings.Count(body, "/run/r/trial/") != 6 {
		t.Errorf("run page: %d %.300s", code, body)
	}
	if code, _, body := get(t, ts, "/run/r/trial/4"); code != 200 || !strings.Contains(body, "<h1>beta#2") {
		t.Errorf("trial page: %d %.300s", code, body)
	}
}

// TestListsReadTamperingAndPassMarks: the run page's standings and trials
// list read what the table report reads of a trial: the tools it
// tampered with (the notes), its pass mark (a reward at the mark is not
// wrong).
func TestListsReadTamperingAndPassMarks(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "r", candidates: []string{"beta"}, tasks: 2, trials: 1, start: t0})
	mark, reward := 0.5, 0.75
	rec.Results[0].Tampered = []string{"/usr/bin/bash"}
	rec.Results[1].Reward, rec.Results[1].PassMark = &reward, &mark
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	for _, index := range []bool{false, true} {
		if index {
			must(t, record.WriteIndex(filepath.Join(dir, record.ResultsFile)))
		}
		_, _, body := get(t, serve(t, Options{Out: out}), "/run/r")
		wantIn(t, body, "tampered: /usr/bin/bash")
		if strings.Contains(body, `<span class="pill partial">wrong</span>`) {
			t.Errorf("a reward at its pass mark is listed wrong (index %v)", index)
		}
	}
}

// TestTrialPageShowsItsScore: a trial's line is written before the run
// scores it; its page shows the score the run gave it (the index's).
func TestTrialPageShowsItsScore(t *testing.T) {
	out := t.TempDir()
	indexedRun(t, out)
	ts := serve(t, Options{Out: out})
	for n, want := range map[int]string{1: "<dt>score</dt><dd>0.00</dd>", 4: "<dt>score</dt><dd>1.00</dd>"} {
		if code, _, body := get(t, ts, "/run/r/trial/"+strconv.Itoa(n)); code != 200 || !strings.Contains(body, want) {
			t.Errorf("trial %d: %d, no %s: %.2000s", n, code, want, body)
		}
	}
}
