package forge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// BenchmarkRunHeap plays 100,000 trivial trials (4 candidates × 25,000
// tasks) through Run with a runner that starts nothing, and reports the
// peak heap in use (sampled every 20 ms), Run's own time per job and the
// time from the last job's end to results.json written, and to Run's
// return (the record read back whole, for the caller's reports):
// what the run keeps per finished trial, without any process's cost.
// Like the command, it lets go of the plan once Run has it. Issue 19's
// targets are forge's peak RSS <= 250 MB at this size and results.json
// written within 2 s of the last job (bench/scale.sh trivial measures
// them, with real processes).
//
//	go test ./forge -run '^$' -bench RunHeap -benchtime 1x
func BenchmarkRunHeap(b *testing.B) {
	b.Run("jobs", func(b *testing.B) {
		for range b.N {
			runHeap(b, false)
		}
	})
	// A suite's 25,000 tasks add their scoring (a matrix of tasks by
	// candidates, pass@k) to the time from the last job to results.json.
	b.Run("suite", func(b *testing.B) {
		for range b.N {
			runHeap(b, true)
		}
	})
}

func runHeap(t *testing.B, suite bool) {
	m, p := testPlan(t, []string{"a", "b", "c", "d"}, 1, 4)
	p.Jobs = nil
	for k := 0; k < 25000; k++ {
		if suite {
			p.Tasks = append(p.Tasks, Task{ID: fmt.Sprintf("t%d", k), Weight: 1})
		}
		for _, id := range []string{"a", "b", "c", "d"} {
			p.Jobs = append(p.Jobs, runner.Job{CandidateID: id, TaskID: fmt.Sprintf("t%d", k), Trial: 1, Objective: "obj", OutputFile: "out.md"})
		}
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	r := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		now := time.Now()
		res := runner.Result{Success: true, ExitCode: new(int), Output: "", Stderr: "", StartedAt: now, FinishedAt: now, RuntimeSeconds: 0.01, JobSeconds: 0.02}
		res.Artifact = []byte("12\n")
		res.SetArtifact(res.Artifact, 3)
		return res, nil
	}}
	var last atomic.Int64 // when the last job ended, in Unix nanoseconds
	events := func(e Event) {
		for n := e.Time.UnixNano(); e.Kind == EventDone; {
			if was := last.Load(); n <= was || last.CompareAndSwap(was, n) {
				break
			}
		}
	}
	jobs := len(p.Jobs)
	t0 := time.Now()
	out := t.TempDir()
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: r, Backend: "local", OutRoot: out, RunID: "mem", Events: events})
	end := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(out, "mem", record.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	if len(rec.Results) != jobs {
		t.Fatalf("%d results of %d jobs", len(rec.Results), jobs)
	}
	t.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	t.ReportMetric(float64(end.Sub(t0).Microseconds())/float64(jobs), "µs/job")
	t.ReportMetric(fi.ModTime().Sub(time.Unix(0, last.Load())).Seconds(), "s-to-results.json")
	t.ReportMetric(end.Sub(time.Unix(0, last.Load())).Seconds(), "s-to-return")
}
