package forge

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// While a job runs, running.json beside results.json names it and its
// phase; when the run ends the file is gone.
func TestRunningFileListsJobsUnderWay(t *testing.T) {
	m, p := testPlan(t, []string{"alpha"}, 1, 1)
	out := t.TempDir()
	dir := filepath.Join(out, "r")
	release := make(chan struct{})
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		job.Progress(runner.PhaseExecute)
		<-release
		return runner.Result{Success: true, ExitCode: new(int)}, nil
	}}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, Backend: "local", OutRoot: out, RunID: "r"})
		done <- err
	}()
	// Wait for the file to say so (the run writes it every quarter
	// second), or for the deadline.
	deadline := time.After(20 * time.Second)
	var got *record.Running
	for got == nil || len(got.Jobs) == 0 {
		select {
		case <-deadline:
			close(release)
			t.Fatalf("running.json never listed the job: %+v", got)
		case <-time.After(10 * time.Millisecond):
		}
		got = record.ReadRunning(dir)
	}
	if j := got.Jobs[0]; len(got.Jobs) != 1 || j.Job != "alpha" || j.Phase != runner.PhaseExecute || j.StartedAt.IsZero() {
		t.Errorf("running.json: %+v", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, record.RunningFile)); !os.IsNotExist(err) {
		t.Errorf("running.json left after the run: %v", err)
	}
}
