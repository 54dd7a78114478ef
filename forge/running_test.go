package forge

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
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
	free := sync.OnceFunc(func() { close(release) })
	defer free() // should the wait fail
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
	// second).
	var got *record.Running
	wait.For(t, "running.json to list the job", 20*time.Second, func() bool {
		got = record.ReadRunning(dir)
		return got != nil && len(got.Jobs) > 0
	})
	if j := got.Jobs[0]; len(got.Jobs) != 1 || j.Job != "alpha" || j.Phase != runner.PhaseExecute || j.StartedAt.IsZero() {
		t.Errorf("running.json: %+v", got)
	}
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, record.RunningFile)); !os.IsNotExist(err) {
		t.Errorf("running.json left after the run: %v", err)
	}
}
