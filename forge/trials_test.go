package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/relaid"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// chatty prints 20 KB to stdout and 5 KB to stderr and writes an artifact
// of 10 KB whose only "needle" is at its end.
func chatty(ctx context.Context, job runner.Job) (runner.Result, error) {
	res := runner.Result{Output: strings.Repeat("o", 20<<10-4) + "END\n", Stderr: strings.Repeat("e", 5<<10-4) + "ERR\n"}
	art := []byte(strings.Repeat("hay ", 10<<8) + "needle")
	res.SetArtifact(art, int64(len(art)))
	res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
	return res, nil
}

// TestRecordKeepsExcerptsAndPaths: the record holds the ends of a chatty
// job's logs and the start of its artifact, flagged as cut, with their
// sizes and the paths of the whole files, which are on disk; the artifact
// check saw the whole artifact.
func TestRecordKeepsExcerptsAndPaths(t *testing.T) {
	m, p := testPlan(t, []string{"alpha", "beta"}, 2, 2)
	m.Scoring = scoring.Config{Scorers: []scoring.Scorer{{Type: scoring.TypeArtifact, Checks: []scoring.Check{{Contains: "needle"}}}}}
	out := t.TempDir()
	if _, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fakeRunner{run: chatty}, Backend: "fake", OutRoot: out, RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	rec, err := record.Read(filepath.Join(out, "r", record.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if rec.SchemaVersion != 4 || rec.Trials != 2 {
		t.Fatalf("schema %d, trials %d", rec.SchemaVersion, rec.Trials)
	}
	for _, r := range rec.Results {
		if len(r.Output) > runner.OutputExcerpt || !r.OutputCut || !strings.HasSuffix(r.Output, "END\n") || r.OutputBytes != 20<<10 {
			t.Errorf("%s#%d output: %d bytes kept, cut %v, size %d", r.CandidateID, r.Trial, len(r.Output), r.OutputCut, r.OutputBytes)
		}
		if len(r.Stderr) > runner.StderrExcerpt || !r.StderrCut || !strings.HasSuffix(r.Stderr, "ERR\n") || r.StderrBytes != 5<<10 {
			t.Errorf("%s#%d stderr: %d bytes kept, cut %v, size %d", r.CandidateID, r.Trial, len(r.Stderr), r.StderrCut, r.StderrBytes)
		}
		if len(r.ArtifactContent) > runner.ArtifactExcerpt || !r.ArtifactCut || strings.Contains(r.ArtifactContent, "needle") {
			t.Errorf("%s#%d artifact: %d bytes kept, cut %v", r.CandidateID, r.Trial, len(r.ArtifactContent), r.ArtifactCut)
		}
		if r.Score == nil || *r.Score != 1 {
			t.Errorf("%s#%d score %v: the check did not see the whole artifact", r.CandidateID, r.Trial, r.Score)
		}
		for path, size := range map[string]int{r.OutputPath: 20 << 10, r.StderrPath: 5 << 10, r.ArtifactPath: 10<<10 + 6} {
			if fi, err := os.Stat(filepath.Join(out, "r", filepath.FromSlash(path))); err != nil || fi.Size() != int64(size) {
				t.Errorf("%s#%d: %q on disk: %v", r.CandidateID, r.Trial, path, err)
			}
		}
	}
}

// TestKilledRunIsReadFromItsTrials: a run killed while its jobs ran left
// results.json without finished_at and a trials.jsonl whose last line was
// cut short (a run of schema 3: its journal.jsonl); record.Read reads every
// finished job (a job's last line wins), and a resume plays exactly the
// others, into trials.jsonl.
func TestKilledRunIsReadFromItsTrials(t *testing.T) {
	for _, schema := range []int{3, record.SchemaVersion} {
		t.Run(fmt.Sprint("schema ", schema), func(t *testing.T) { killedRunIsRead(t, schema) })
	}
}

func killedRunIsRead(t *testing.T, schema int) {
	m, p := testPlan(t, []string{"a", "b", "c"}, 2, 2)
	out := t.TempDir()
	dir := filepath.Join(out, "k")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	head := &record.Record{SchemaVersion: schema, RunID: "k", Backend: "fake", ManifestHash: m.Hash, Trials: 2}
	if err := record.WriteSummary(filepath.Join(dir, record.ResultsFile), head); err != nil {
		t.Fatal(err)
	}
	trials := record.TrialsFile
	if schema < 4 {
		trials = record.JournalFile
	}
	line := func(id string, trial int, kind runner.ErrorKind) []byte {
		r := runner.Result{CandidateID: id, Trial: trial, Success: kind == runner.ErrNone}
		if kind != runner.ErrNone {
			r.Failed(kind, "x")
		}
		b, _ := json.Marshal(r)
		return append(b, '\n')
	}
	var j bytes.Buffer
	j.Write(line("a", 1, runner.ErrInfra))
	j.Write(line("b", 2, runner.ErrCandidateFailed))
	j.Write(line("a", 1, runner.ErrNone)) // played again: the last line wins
	torn := line("c", 1, runner.ErrNone)
	j.Write(torn[:len(torn)/2])
	if err := os.WriteFile(filepath.Join(dir, trials), j.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := record.Read(filepath.Join(dir, record.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Results) != 2 || !rec.Results[0].Success || rec.Results[1].ErrorKind != runner.ErrCandidateFailed {
		t.Fatalf("read from %s: %+v", trials, rec.Results)
	}

	var played []string
	var calls atomic.Int32
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		calls.Add(1)
		return runner.Result{Success: true, ExitCode: new(int)}, nil
	}}
	p.Concurrency = 1 // played in plan order, for the list below
	got, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, Backend: "fake", OutRoot: out, RunID: "k", Resume: rec,
		Events: func(e Event) {
			if e.Kind == EventStarted {
				played = append(played, e.Job)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a#2", "b", "c", "c#2"}; !reflect.DeepEqual(played, want) {
		t.Errorf("resume played %v, want %v", played, want)
	}
	if len(got.Results) != 6 || got.Results[3].ErrorKind != runner.ErrCandidateFailed {
		t.Errorf("resumed record: %+v", got.Results)
	}
	tr, err := record.ReadTrials(filepath.Join(dir, record.TrialsFile))
	if err != nil || len(tr) != 6 {
		t.Errorf("trials after the resume: %d jobs, %v", len(tr), err)
	}
	if _, err := os.Stat(filepath.Join(dir, record.JournalFile)); err == nil {
		t.Errorf("the journal of schema 3 is still there after the resume")
	}
}

// A job's file written again (a resumed job) is a new file: a merged run
// that hard-linked the old one keeps what it merged.
func TestRewrittenJobFileLeavesItsLinksAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stdout.log")
	if err := writeJobFile(path, []byte("first")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "merged-stdout.log")
	if err := os.Link(path, link); err != nil {
		t.Fatal(err)
	}
	if err := writeJobFile(path, []byte("second")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{path: "second", link: "first"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s holds %q (%v), want %q", filepath.Base(p), b, err, want)
		}
	}
}

// TestPlanOrderIsThePlans: a run's trials read back in any order are put
// in the order its plan has them, with tasks and without.
func TestPlanOrderIsThePlans(t *testing.T) {
	suite, err := shardSuite(t, shardCands, shardTasks, shardScoring).Plan(Overrides{Trials: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, single := testPlan(t, []string{"c", "a", "b"}, 3, 1)
	for name, p := range map[string]*Plan{"suite": suite, "no tasks": single} {
		rec := &record.Record{Candidates: p.Candidates}
		for _, task := range p.Tasks {
			rec.Tasks = append(rec.Tasks, record.TaskInfo{ID: task.ID})
		}
		var want []string
		var results []record.Trial
		for _, j := range p.Jobs {
			want = append(want, fmt.Sprintf("%s/%s#%d", j.CandidateID, j.TaskID, j.Trial))
			results = append(results, record.Trial{Result: runner.Result{CandidateID: j.CandidateID, TaskID: j.TaskID, Trial: j.Trial}})
		}
		rand.Shuffle(len(results), func(i, j int) { results[i], results[j] = results[j], results[i] })
		rec.FinishedAt = time.Now()
		var got []string
		order, n := rec.Arrange(results)
		for _, i := range order[:n] {
			r := results[i]
			got = append(got, fmt.Sprintf("%s/%s#%d", r.CandidateID, r.TaskID, r.Trial))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v\nwant %v", name, got, want)
		}
	}
}

// TestRecordIsReadWhateverItsLayout: a record re-indented with its keys in
// another order reads as the record it was, whole and as a summary, and
// its run can be resumed.
func TestRecordIsReadWhateverItsLayout(t *testing.T) {
	m, p := testPlan(t, []string{"alpha", "beta"}, 2, 2)
	m.Scoring = scoring.Config{Scorers: []scoring.Scorer{{Type: scoring.TypeArtifact, Checks: []scoring.Check{{Contains: "needle"}}}}}
	out := t.TempDir()
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fakeRunner{run: chatty}, Backend: "fake", OutRoot: out, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "r")
	if err := relaid.Document(filepath.Join(dir, record.ResultsFile), "\t"); err != nil {
		t.Fatal(err)
	}
	if err := relaid.Lines(filepath.Join(dir, record.TrialsFile)); err != nil {
		t.Fatal(err)
	}
	got, err := record.Read(filepath.Join(dir, record.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, rec)
	}
	sum, tasks, err := record.ReadSummary(filepath.Join(dir, record.ResultsFile))
	if err != nil || tasks != 0 || sum.Results != nil || sum.WinnerLine != rec.WinnerLine || !reflect.DeepEqual(sum.Standings, rec.Standings) {
		t.Errorf("summary: %d tasks, %v: %+v", tasks, err, sum)
	}
	if _, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fakeRunner{run: chatty}, Backend: "fake", OutRoot: out, RunID: "r", Resume: got}); err != nil {
		t.Errorf("resume: %v", err)
	}
}

// TestFinishedRunCountsATrialsLastLine: a trial on two lines of a finished
// run's trials.jsonl (played again) is read once, as its last line says,
// in its place in the plan.
func TestFinishedRunCountsATrialsLastLine(t *testing.T) {
	m, p := testPlan(t, []string{"alpha", "beta"}, 2, 2)
	out := t.TempDir()
	if _, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fakeRunner{run: chatty}, Backend: "fake", OutRoot: out, RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	again := runner.Result{CandidateID: "alpha", Trial: 2}
	again.Failed(runner.ErrCandidateFailed, "played again")
	line, err := json.Marshal(&again)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(out, "r", record.TrialsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(line, '\n'))
	f.Close()
	rec, err := record.Read(filepath.Join(out, "r", record.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Results) != 4 || rec.Results[1].CandidateID != "alpha" || rec.Results[1].ErrorMessage != "played again" || rec.Results[2].CandidateID != "beta" {
		t.Errorf("results: %+v", rec.Results)
	}
}
