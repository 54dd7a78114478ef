//go:build linux

package local

import (
	"context"
	"testing"

	"github.com/forge-run/forge/runner"
)

// BenchmarkRunTrivial measures the local backend's overhead per job (working
// directory, containment, one sh process, read back, cleanup) for each tier.
func BenchmarkRunTrivial(b *testing.B) {
	for _, tier := range tiers {
		b.Run(string(tier), func(b *testing.B) {
			r, err := New(Options{TempDir: b.TempDir(), Containment: tier})
			if err != nil {
				b.Skipf("%s: %v", tier, err)
			}
			job := runner.Job{
				RunID: "bench", CandidateID: "trivial", Trial: 1, Objective: "o",
				Command: []string{"/bin/sh", "-c", `echo done > "$2"`, "sh"},
			}
			for b.Loop() {
				res, err := r.Run(context.Background(), job)
				if err != nil || !res.Success {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}
