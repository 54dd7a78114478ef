package forge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// TestRunReadsItsTrialsBackInPlanOrder: the record Run returns holds its
// trials as record.Read reads them from the run's files (each found by
// its name, scored from results.json): in plan order whatever order they
// ended in, each with its score, with the jobs a cancelled run never
// started; and so does the run resumed, whose kept trials come first in
// trials.jsonl.
func TestRunReadsItsTrialsBackInPlanOrder(t *testing.T) {
	var b strings.Builder
	b.WriteString(suiteHead + "scoring: [{type: artifact, checks: [{equals_task: expected}]}]\ntasks:\n")
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&b, "  - {id: t%d, expected: \"%d\"}\n", i, i)
	}
	m, err := loadSuite(t, b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(Overrides{Trials: 2})
	if err != nil {
		t.Fatal(err)
	}
	// b's second trials are wrong; cancel, when set, is called by the
	// job it names.
	var cancelAt string
	var cancel context.CancelFunc
	play := func(job runner.Job) runner.Result {
		answer := strings.TrimPrefix(job.TaskID, "t")
		if job.CandidateID == "b" && job.Trial == 2 {
			answer = "wrong"
		}
		var res runner.Result
		res.SetArtifact([]byte(answer), int64(len(answer)))
		res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
		if job.Name() == cancelAt {
			cancel()
		}
		return res
	}
	sameAsRead := func(name string, rec *record.Record, dir string) {
		t.Helper()
		got, err := record.Read(filepath.Join(dir, record.ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rec, got) {
			t.Errorf("%s: Run's record:\n%+v\nread back:\n%+v", name, rec.Results, got.Results)
		}
		// The index the run wrote from what it read back is the one
		// made from its files.
		path := filepath.Join(dir, record.ResultsFile)
		written, err := os.ReadFile(filepath.Join(dir, record.IndexFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := record.WriteIndex(path); err != nil {
			t.Fatal(err)
		}
		if made, _ := os.ReadFile(filepath.Join(dir, record.IndexFile)); !bytes.Equal(written, made) {
			t.Errorf("%s: the run's trials.index (%d bytes) is not the one made from its files (%d bytes)", name, len(written), len(made))
		}
	}
	out := t.TempDir()

	// The plan's first job ends once its last has: trials.jsonl is not in
	// plan order.
	first, last := p.Jobs[0].Name(), p.Jobs[len(p.Jobs)-1].Name()
	lastDone := make(chan struct{})
	p.Concurrency = len(p.Jobs)
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Backend: "fake", OutRoot: out, RunID: "whole",
		Runner: fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
			if job.Name() == first {
				<-lastDone
			}
			return play(job), nil
		}},
		Events: func(e Event) {
			if e.Kind == EventDone && e.Job == last {
				close(lastDone)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := os.ReadFile(filepath.Join(out, "whole", record.TrialsFile))
	at := func(j runner.Job) int {
		return strings.Index(string(lines), fmt.Sprintf(`{"candidate_id":%q,"task_id":%q,"trial":%d,`, j.CandidateID, j.TaskID, j.Trial))
	}
	if r := rec.Results[0]; r.CandidateID != "a" || r.TaskID != "t1" || r.Trial != 1 || r.Score == nil || *r.Score != 1 ||
		at(p.Jobs[0]) < at(p.Jobs[len(p.Jobs)-1]) {
		t.Fatalf("first result %+v; trials.jsonl:\n%s", r, lines)
	}
	sameAsRead("whole", rec, filepath.Join(out, "whole"))

	// Cancelled after its fifth job, one at a time: the others never start.
	ctx, c := context.WithCancel(context.Background())
	cancel, cancelAt = c, p.Jobs[4].Name()
	p.Concurrency = 1
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) { return play(job), nil }}
	rec, err = Run(ctx, Options{Manifest: m, Plan: p, Runner: fr, Backend: "fake", OutRoot: out, RunID: "cut"})
	if !errors.Is(err, context.Canceled) || rec.Results[5].ErrorKind != runner.ErrCancelled {
		t.Fatalf("cancelled run: %v, %+v", err, rec.Results[5])
	}
	sameAsRead("cancelled", rec, filepath.Join(out, "cut"))

	cancelAt = ""
	prev := readRecord(t, filepath.Join(out, "cut", record.ResultsFile))
	p.Concurrency = len(p.Jobs)
	if rec, err = Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, Backend: "fake", OutRoot: out, RunID: "cut", Resume: &prev}); err != nil {
		t.Fatal(err)
	}
	if r := rec.Results[len(rec.Results)-1]; r.CandidateID != "b" || r.TaskID != "t3" || r.Trial != 2 || r.Score == nil || *r.Score != 0 {
		t.Errorf("resumed: last result %+v", r)
	}
	sameAsRead("resumed", rec, filepath.Join(out, "cut"))
}
