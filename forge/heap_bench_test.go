package forge

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// BenchmarkRunHeap plays 100,000 trivial trials (4 candidates × 25,000
// tasks) through Run with a runner that starts nothing, and reports the
// peak heap in use (sampled every 20 ms) and Run's own time per job: what
// the run keeps per finished trial, without any process's cost. Issue
// 19's target is forge's peak RSS <= 250 MB at this size
// (bench/scale.sh trivial measures that, with real processes).
//
//	go test ./forge -run '^$' -bench RunHeap -benchtime 1x
func BenchmarkRunHeap(b *testing.B) {
	for range b.N {
		runHeap(b)
	}
}

func runHeap(t *testing.B) {
	m, p := testPlan(t, []string{"a", "b", "c", "d"}, 1, 4)
	p.Jobs = nil
	for k := 0; k < 25000; k++ {
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
	t0 := time.Now()
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: r, Backend: "local", OutRoot: t.TempDir(), RunID: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	if len(rec.Results) != len(p.Jobs) {
		t.Fatalf("%d results of %d jobs", len(rec.Results), len(p.Jobs))
	}
	t.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	t.ReportMetric(float64(time.Since(t0).Microseconds())/float64(len(p.Jobs)), "µs/job")
}
