//go:build linux

package forge

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// BenchmarkRunOverhead measures what forge.Run itself costs per job, the
// runner aside (a fake that answers at once, as a trivial candidate would):
// the fan-out, storing each job's logs and artifact, results.json, the
// scoring and the record. Reported per job: wall time and forge's CPU
// (self-ms/job).
func BenchmarkRunOverhead(b *testing.B) {
	const jobs = 500
	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i)
	}
	m, p := testPlan(b, ids, 1, 2)
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		job.Enter(runner.PhaseExecute)
		res := runner.Result{CandidateID: job.CandidateID, Trial: job.Trial, Output: "done\n", RuntimeSeconds: 0.01}
		res.SetArtifact([]byte("# ok\n"), 5)
		res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
		return res, nil
	}}
	out := b.TempDir()
	before := selfCPU()
	n := 0
	for b.Loop() {
		n++
		if _, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, Backend: "fake",
			OutRoot: out, RunID: fmt.Sprintf("r%d", n)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(n*jobs), "ms/job")
	b.ReportMetric((selfCPU()-before).Seconds()*1000/float64(n*jobs), "self-ms/job")
}

// selfCPU is this process's CPU time (user and system) so far.
func selfCPU() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
