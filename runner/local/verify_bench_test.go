//go:build linux

package local

import (
	"context"
	"testing"

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
			jobs := [2]runner.Job{plain, verified}
			benchPair(b, [2]string{"plain", "verified"}, "verify", func(i int) (runner.Result, error) {
				return r.Run(context.Background(), jobs[i])
			}, func(i int, res runner.Result) bool { return i == 0 || res.Reward != nil && *res.Reward == 1 })
		})
	}
}
