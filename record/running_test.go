package record

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

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
	if err := Write(head, &Record{SchemaVersion: SchemaVersion, RunID: "r"}); err != nil {
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
	r := StartRunning(dir, func() time.Time { return time.Unix(0, clock.Load()) })
	defer r.Close()
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
