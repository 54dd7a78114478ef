package forge

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// fakeRunner is a function-field fake of runner.Runner.
type fakeRunner struct {
	run func(ctx context.Context, job runner.Job) (runner.Result, error)
}

func (f fakeRunner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	return f.run(ctx, job)
}

var _ runner.Runner = fakeRunner{}

func testPlan(t testing.TB, ids []string, trials, concurrency int) (*Manifest, *Plan) {
	t.Helper()
	m := &Manifest{Objective: "obj", Path: "/x/forge.yaml", Hash: "sha256:test"}
	p := &Plan{Objective: "obj", Concurrency: concurrency, Trials: trials, Candidates: ids}
	for _, id := range ids {
		for tr := 1; tr <= trials; tr++ {
			p.Jobs = append(p.Jobs, runner.Job{CandidateID: id, Trial: tr, Objective: "obj", OutputFile: "out.md"})
		}
	}
	return m, p
}

func readRecord(t *testing.T, path string) record.Record {
	t.Helper()
	rec, err := record.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return *rec
}

func TestRunWritesResultsAndFiles(t *testing.T) {
	m, p := testPlan(t, []string{"alpha", "beta"}, 2, 2)
	out := t.TempDir()
	var running, peak atomic.Int32
	var events sync.Map
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		job.Enter(runner.PhaseExecute)
		res := runner.Result{Output: "hello from " + job.Name() + "\n", Stderr: "\xff\xfe bad utf8"}
		if job.CandidateID == "alpha" {
			res.SetArtifact([]byte("# post"), 6)
			res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
		} else {
			one := 1
			res.Stderr = "Traceback\nZeroDivisionError: division by zero\n"
			res.Settle(job, runner.Outcome{ExitCode: &one})
		}
		return res, nil
	}}
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, Backend: "fake", OutRoot: out, RunID: "r1",
		Events: func(e Event) { events.Store(string(e.Kind)+" "+e.Job, true) }})
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() > 2 {
		t.Errorf("peak concurrency %d > 2", peak.Load())
	}
	if len(rec.Results) != 4 {
		t.Fatalf("%d results", len(rec.Results))
	}
	onDisk := readRecord(t, filepath.Join(out, "r1", "results.json"))
	if onDisk.SchemaVersion != record.SchemaVersion || onDisk.RunID != "r1" || len(onDisk.Results) != 4 || onDisk.ManifestHash != "sha256:test" {
		t.Fatalf("results.json = %+v", onDisk)
	}
	a2 := onDisk.Results[1]
	if a2.CandidateID != "alpha" || a2.Trial != 2 || !a2.Success || a2.ArtifactPath != "alpha/trial-2/out.md" {
		t.Errorf("alpha#2 = %+v", a2)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "r1", "alpha", "trial-2", "out.md")); string(b) != "# post" {
		t.Errorf("artifact on disk = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "r1", "beta", "trial-1", "stderr.log")); string(b) != "Traceback\nZeroDivisionError: division by zero\n" {
		t.Errorf("stderr.log = %q", b)
	}
	b1 := onDisk.Results[2]
	if b1.Success || b1.ErrorKind != runner.ErrCandidateFailed || b1.ErrorMessage != "ZeroDivisionError: division by zero" {
		t.Errorf("beta#1 = %+v", b1)
	}
	for _, k := range []string{"started alpha", "phase alpha#2", "done beta#2"} {
		if _, ok := events.Load(k); !ok {
			t.Errorf("no event %q", k)
		}
	}
	if _, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, OutRoot: out, RunID: "r1"}); err == nil {
		t.Error("a second run with the same id overwrote the first")
	}
}

func TestRunCancelledWritesPartialResults(t *testing.T) {
	m, p := testPlan(t, []string{"a", "b", "c", "d"}, 1, 1)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := 0
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		started++
		if job.CandidateID == "a" {
			res := runner.Result{}
			res.SetArtifact([]byte("x"), 1)
			res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
			return res, nil
		}
		cancel() // Ctrl-C while b runs
		<-ctx.Done()
		res := runner.Result{}
		res.Settle(job, runner.Outcome{Cancelled: true})
		return res, nil
	}}
	rec, err := Run(ctx, Options{Manifest: m, Plan: p, Runner: fr, OutRoot: out, RunID: "r"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if started != 2 {
		t.Errorf("%d jobs started after the interrupt; want none beyond b", started-2)
	}
	onDisk := readRecord(t, filepath.Join(out, "r", "results.json"))
	if !onDisk.Interrupted || len(onDisk.Results) != 4 {
		t.Fatalf("interrupted=%v results=%d", onDisk.Interrupted, len(onDisk.Results))
	}
	kinds := []runner.ErrorKind{}
	for _, r := range rec.Results {
		kinds = append(kinds, r.ErrorKind)
	}
	want := []runner.ErrorKind{runner.ErrNone, runner.ErrCancelled, runner.ErrCancelled, runner.ErrCancelled}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("kinds = %v, want %v", kinds, want)
			break
		}
	}
}

func TestRunStopsWhenBackendUnusable(t *testing.T) {
	m, p := testPlan(t, []string{"a", "b", "c"}, 1, 1)
	var calls atomic.Int32
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		calls.Add(1)
		res := runner.Result{}
		res.Failed(runner.ErrAuth, "401 Unauthorized")
		return res, &runner.UnusableError{Kind: runner.ErrAuth, Err: errors.New("401 Unauthorized")}
	}}
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, OutRoot: t.TempDir(), RunID: "r"})
	var ue *runner.UnusableError
	if !errors.As(err, &ue) || ue.Kind != runner.ErrAuth {
		t.Fatalf("err = %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("runner called %d times after the backend was found unusable", calls.Load())
	}
	if rec == nil || rec.Results[0].ErrorKind != runner.ErrAuth || rec.Results[2].ErrorKind != runner.ErrCancelled {
		t.Errorf("record = %+v", rec)
	}
}

// The transcript a runner brought back is stored whole beside the job's
// logs as transcript.jsonl, secrets masked; the record holds its path and
// counts, never its content. An artifact of the same name steps aside.
func TestRunStoresTranscript(t *testing.T) {
	m, p := testPlan(t, []string{"alpha"}, 1, 1)
	p.Jobs[0].OutputFile = "transcript.jsonl"
	const secret = "sk-transcript-secret-42"
	transcript := `{"role": "user", "content": "key ` + secret + `"}` + "\n" + "oops\n" + `{"role": "assistant", "content": "unique-reply"}` + "\n"
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		var res runner.Result
		res.SetArtifact([]byte("# post"), 6)
		res.SetTranscript([]byte(transcript), int64(len(transcript)))
		res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
		return res, nil
	}}
	out := t.TempDir()
	if _, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, Backend: "fake", OutRoot: out, RunID: "r1",
		Mask: []string{secret}}); err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, filepath.Join(out, "r1", "results.json"))
	r := rec.Results[0]
	if r.TranscriptPath != "alpha/transcript.jsonl" || r.TranscriptSteps != 2 || r.TranscriptBytes != int64(len(transcript)) ||
		r.TranscriptNote == "" || r.ArtifactPath != "alpha/artifact-transcript.jsonl" {
		t.Errorf("result: path %q, %d steps, %d bytes, note %q, artifact %q", r.TranscriptPath, r.TranscriptSteps, r.TranscriptBytes, r.TranscriptNote, r.ArtifactPath)
	}
	b, err := os.ReadFile(filepath.Join(out, "r1", filepath.FromSlash(r.TranscriptPath)))
	if want := strings.ReplaceAll(transcript, secret, "***"); err != nil || string(b) != want {
		t.Errorf("stored transcript %q, %v; want %q", b, err, want)
	}
	for _, name := range []string{"results.json", record.TrialsFile} {
		if rb, _ := os.ReadFile(filepath.Join(out, "r1", name)); bytes.Contains(rb, []byte("unique-reply")) || len(rb) == 0 {
			t.Errorf("%s holds the transcript (or nothing): %s", name, rb)
		}
	}
}
