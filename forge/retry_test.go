package forge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// scriptedRunner ends each job's attempts as its script says, in order
// (the last entry repeats), and counts the attempts.
type scriptedRunner struct {
	mu       sync.Mutex
	attempts map[string]int
	script   func(job runner.Job, attempt int) runner.ErrorKind
}

func (s *scriptedRunner) Run(_ context.Context, job runner.Job) (runner.Result, error) {
	s.mu.Lock()
	s.attempts[job.Name()]++
	n := s.attempts[job.Name()]
	s.mu.Unlock()
	res := runner.Result{SandboxID: fmt.Sprintf("sb-%s-%d", job.Name(), n)}
	switch kind := s.script(job, n); kind {
	case runner.ErrNone:
		res.SetArtifact([]byte("ok"), 2)
		res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
	default:
		res.Failed(kind, fmt.Sprintf("attempt %d: %s", n, kind))
	}
	return res, nil
}

func (s *scriptedRunner) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[name]
}

func retryRun(t *testing.T, p *Plan, m *Manifest, r runner.Runner, out ...string) (*record.Record, []Event, error) {
	t.Helper()
	var mu sync.Mutex
	var events []Event
	root := t.TempDir()
	if len(out) > 0 {
		root = out[0]
	}
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: r, Backend: "fake", OutRoot: root, RunID: "r",
		Events: func(e Event) {
			if e.Kind == EventRetry {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
		}})
	return rec, events, err
}

// Only infra is played again, in a fresh sandbox, up to the candidate's
// retries; the result is the last attempt's, with the earlier ones' errors.
// A candidate's own failure is data: one attempt.
func TestInfraTrialsArePlayedAgain(t *testing.T) {
	m, p := testPlan(t, []string{"flaky", "failing", "broken", "off"}, 1, 1)
	p.Retries = map[string]int{"flaky": 2, "failing": 2, "broken": 2, "off": 0}
	sr := &scriptedRunner{attempts: map[string]int{}, script: func(job runner.Job, n int) runner.ErrorKind {
		switch job.CandidateID {
		case "flaky": // infra twice, then it runs
			if n < 3 {
				return runner.ErrInfra
			}
			return runner.ErrNone
		case "failing":
			return runner.ErrCandidateFailed
		}
		return runner.ErrInfra // broken, off
	}}
	out := t.TempDir()
	rec, events, err := retryRun(t, p, m, sr, out)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]record.Trial{}
	for _, r := range rec.Results {
		byID[r.CandidateID] = r
	}
	flaky := byID["flaky"]
	if !flaky.Success || flaky.Attempts != 3 || flaky.SandboxID != "sb-flaky-3" || len(flaky.AttemptErrors) != 2 ||
		flaky.AttemptErrors[0] != (record.AttemptError{Kind: runner.ErrInfra, Message: "attempt 1: infra", SandboxID: "sb-flaky-1"}) ||
		flaky.AttemptErrors[1].SandboxID != "sb-flaky-2" {
		t.Errorf("flaky: %+v", flaky)
	}
	if f := byID["failing"]; f.ErrorKind != runner.ErrCandidateFailed || f.Attempts != 1 || f.AttemptErrors != nil || sr.count("failing") != 1 {
		t.Errorf("failing: %d attempts, %+v", sr.count("failing"), f)
	}
	if b := byID["broken"]; b.ErrorKind != runner.ErrInfra || b.Attempts != 3 || len(b.AttemptErrors) != 2 || b.ErrorMessage != "attempt 3: infra" {
		t.Errorf("broken: %+v", b)
	}
	if o := byID["off"]; o.Attempts != 1 || sr.count("off") != 1 {
		t.Errorf("retries 0: %d attempts, %+v", sr.count("off"), o)
	}
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%s %d/%d %s", e.Job, e.Attempt, e.Attempts, e.Result.ErrorMessage))
	}
	want := []string{"flaky 2/3 attempt 1: infra", "flaky 3/3 attempt 2: infra", "broken 2/3 attempt 1: infra", "broken 3/3 attempt 2: infra"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("retry events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	onDisk := readRecord(t, filepath.Join(out, "r", "results.json"))
	if r := onDisk.Results[0]; r.Attempts != 3 || len(r.AttemptErrors) != 2 {
		t.Errorf("results.json: attempts %d, attempt_errors %+v", r.Attempts, r.AttemptErrors)
	}
}

// A fault that never clears stops the run once as many trials in a row as
// run at once (at least two) spent all their attempts: the rest are not
// started.
func TestFailingInfrastructureStopsTheRun(t *testing.T) {
	m, p := testPlan(t, []string{"a", "b"}, 5, 1)
	p.Retries = map[string]int{"a": 2, "b": 2}
	sr := &scriptedRunner{attempts: map[string]int{}, script: func(runner.Job, int) runner.ErrorKind { return runner.ErrInfra }}
	rec, _, err := retryRun(t, p, m, sr)
	var ue *runner.UnusableError
	var fe *FailingInfraError
	if !errors.As(err, &ue) || ue.Kind != runner.ErrInfra || !errors.As(err, &fe) ||
		!strings.Contains(err.Error(), "2 trials in a row failed all their attempts (the last: a#2, 3 attempts): attempt 3: infra") {
		t.Fatalf("err = %v", err)
	}
	total := 0
	for _, r := range rec.Results {
		total += sr.count(runner.Job{CandidateID: r.CandidateID, Trial: r.Trial}.Name())
	}
	if total != 6 {
		t.Errorf("%d attempts in all, want the first two trials' 3 each", total)
	}
	if rec.Results[2].ErrorKind != runner.ErrCancelled {
		t.Errorf("a#3: %s, want cancelled (not started)", rec.Results[2].ErrorKind)
	}
}

// One trial that spends its attempts while the others run (a fast failure
// among slow candidates) does not stop the run.
func TestOneFailingTrialDoesNotStopTheRun(t *testing.T) {
	m, p := testPlan(t, []string{"a", "b", "c", "d"}, 1, 4)
	sr := &scriptedRunner{attempts: map[string]int{}, script: func(job runner.Job, _ int) runner.ErrorKind {
		if job.CandidateID == "b" {
			return runner.ErrInfra
		}
		return runner.ErrNone
	}}
	rec, _, err := retryRun(t, p, m, sr)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Results[0].Success || !rec.Results[3].Success || rec.Results[1].Attempts != 3 {
		t.Errorf("results %+v", rec.Results)
	}
}

// Once a trial has run, an unlucky trial that spends its retries is
// recorded infra and the run goes on.
func TestInfraAfterATrialRanDoesNotStopTheRun(t *testing.T) {
	m, p := testPlan(t, []string{"a"}, 3, 1)
	p.Retries = map[string]int{"a": 1}
	sr := &scriptedRunner{attempts: map[string]int{}, script: func(job runner.Job, _ int) runner.ErrorKind {
		if job.Trial == 2 {
			return runner.ErrInfra
		}
		return runner.ErrNone
	}}
	rec, _, err := retryRun(t, p, m, sr)
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Results[1]; r.ErrorKind != runner.ErrInfra || r.Attempts != 2 || !rec.Results[2].Success {
		t.Errorf("results %+v", rec.Results)
	}
}

// An infra failure a fresh sandbox would repeat (Result.Lasting: the
// image refuses the job's files) is not played again, and trials failing
// so, however many in a row, do not stop the run.
func TestLastingInfraIsNotPlayedAgain(t *testing.T) {
	m, p := testPlan(t, []string{"a", "b"}, 3, 1)
	p.Retries = map[string]int{"a": 2, "b": 2}
	sr := &scriptedRunner{attempts: map[string]int{}, script: func(job runner.Job, _ int) runner.ErrorKind {
		if job.CandidateID == "a" {
			return runner.ErrInfra
		}
		return runner.ErrNone
	}}
	lasting := lastingRunner{sr}
	rec, events, err := retryRun(t, p, m, lasting)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rec.Results {
		switch {
		case r.CandidateID == "a" && (r.ErrorKind != runner.ErrInfra || r.Attempts != 1 || r.AttemptErrors != nil):
			t.Errorf("a#%d: %s, %d attempts", r.Trial, r.ErrorKind, r.Attempts)
		case r.CandidateID == "b" && !r.Success:
			t.Errorf("b#%d: %s %q", r.Trial, r.ErrorKind, r.ErrorMessage)
		}
	}
	n := 0
	for tr := 1; tr <= 3; tr++ {
		n += sr.count(runner.Job{CandidateID: "a", Trial: tr}.Name())
	}
	if n != 3 || len(events) != 0 {
		t.Errorf("a played %d times, %d retries announced; want 3 and none", n, len(events))
	}
}

// lastingRunner is a scriptedRunner whose infra failures are lasting.
type lastingRunner struct{ *scriptedRunner }

func (l lastingRunner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	res, err := l.scriptedRunner.Run(ctx, job)
	res.Lasting = res.ErrorKind == runner.ErrInfra
	return res, err
}

// Retries come from --retries, else the candidate's, else the defaults',
// else DefaultRetries; 0 is a value of its own.
func TestPlanRetries(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.py": okScript, "forge.yaml": `objective: x
defaults:
  retries: 0
candidates:
  - {id: a, script: a.py}
  - {id: b, script: a.py, retries: 5}
`, "plain.yaml": "objective: x\ncandidates: [{id: a, script: a.py}]\n"})
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := p.RetriesOf("a"), p.RetriesOf("b"); a != 0 || b != 5 {
		t.Errorf("retries a %d b %d, want 0 and 5", a, b)
	}
	p, err = m.Plan(Overrides{Retries: new(1)})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := p.RetriesOf("a"), p.RetriesOf("b"); a != 1 || b != 1 {
		t.Errorf("--retries 1: a %d b %d", a, b)
	}
	m, err = Load(filepath.Join(dir, "plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = m.Plan(Overrides{}); err != nil || p.RetriesOf("a") != DefaultRetries {
		t.Errorf("default: %v %d", err, p.RetriesOf("a"))
	}
}
