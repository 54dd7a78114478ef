//go:build linux

package local

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// BenchmarkRunVerified is what a verifier adds to a job, per tier:
// BenchmarkRunTrivial's job, then the same with a verifier that writes
// reward 1, one of each in turn so that a shared machine's load weighs on
// both alike (plain-ms/op, verified-ms/op, and the median of the pairs'
// differences, verify-ms/op). The difference is the verifier's starting
// clean (a box of its own, once the candidate's processes have ended), its
// files' directories, its one sh and its reward read back: an upper bound
// of the clean start alone.
func BenchmarkRunVerified(b *testing.B) {
	plain := trivialJob()
	verified := trivialJob()
	verified.Verify = &runner.Verify{Command: `echo 1 > "$` + runner.VerifierLogsVar + `/reward.txt"`}
	for _, tier := range tiers {
		b.Run(string(tier), func(b *testing.B) {
			r := benchRunner(b, tier)
			var wall [2]time.Duration
			var extra []time.Duration
			for b.Loop() {
				var took [2]time.Duration
				for i, job := range []runner.Job{plain, verified} {
					begin := time.Now()
					res, err := r.Run(context.Background(), job)
					took[i] = time.Since(begin)
					if err != nil || !res.Success || (i == 1 && (res.Reward == nil || *res.Reward != 1)) {
						b.Fatalf("%v %+v", err, res)
					}
					wall[i] += took[i]
				}
				extra = append(extra, took[1]-took[0])
			}
			slices.Sort(extra)
			ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
			b.ReportMetric(ms(wall[0]), "plain-ms/op")
			b.ReportMetric(ms(wall[1]), "verified-ms/op")
			b.ReportMetric(extra[len(extra)/2].Seconds()*1000, "verify-ms/op")
			b.ReportMetric(0, "ns/op") // a pair per op: the metrics above say it
		})
	}
}
