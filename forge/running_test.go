package forge

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

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
	var got *Running
	for got == nil || len(got.Jobs) == 0 {
		select {
		case <-deadline:
			close(release)
			t.Fatalf("running.json never listed the job: %+v", got)
		case <-time.After(10 * time.Millisecond):
		}
		got = ReadRunning(dir)
	}
	if j := got.Jobs[0]; len(got.Jobs) != 1 || j.Job != "alpha" || j.Phase != runner.PhaseExecute || j.StartedAt.IsZero() {
		t.Errorf("running.json: %+v", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, RunningFile)); !os.IsNotExist(err) {
		t.Errorf("running.json left after the run: %v", err)
	}
}

// An unfinished run is stopped when its last sign of life, running.json's
// time or (before the run wrote one) results.json's, is over six beats
// old; a run playing rewrites running.json at least every beat, whether
// or not anything changed.
func TestStoppedRunHasNoSignOfLife(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	if stopped, _ := Stopped(dir, now); stopped {
		t.Error("a directory without a run is stopped")
	}
	head := filepath.Join(dir, ResultsFile)
	if err := WriteRecord(head, &Record{SchemaVersion: SchemaVersion, RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	if stopped, _ := Stopped(dir, now); stopped {
		t.Error("a run that has just written its head is stopped")
	}
	old := now.Add(-7 * RunningBeat)
	if err := os.Chtimes(head, old, old); err != nil {
		t.Fatal(err)
	}
	if stopped, last := Stopped(dir, now); !stopped || !last.Equal(old) {
		t.Errorf("a run without running.json whose head is %v old: stopped %v, last sign %v", now.Sub(old), stopped, last)
	}

	var clock atomic.Int64 // the run's clock, read by its writer too
	clock.Store(now.UnixNano())
	r := startRunning(dir, func() time.Time { return time.Unix(0, clock.Load()) })
	defer r.close()
	if stopped, _ := Stopped(dir, now); stopped {
		t.Error("a run is stopped once it has started running.json")
	}
	later := now.Add(time.Minute)
	clock.Store(later.UnixNano())
	if r.write(false) {
		t.Error("running.json rewritten with nothing changed and no beat due")
	}
	if stopped, _ := Stopped(dir, later); !stopped {
		t.Error("a run whose running.json is a minute old is not stopped")
	}
	if !r.write(true) {
		t.Error("running.json not rewritten on a beat")
	}
	if stopped, last := Stopped(dir, later); stopped || !last.Equal(later) {
		t.Errorf("after a beat: stopped %v, last sign %v, want %v", stopped, last, later)
	}
}
