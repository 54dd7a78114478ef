//go:build linux

package local

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// BenchmarkRunTrivial measures the local backend's overhead per job (working
// directory, containment, one sh process, read back, cleanup) for each tier:
// wall time, and CPU time of forge's own process (self-ms/op) and of the
// processes it started (children-ms/op: the sh and the tier's own, such as
// the PID namespace's init).
func BenchmarkRunTrivial(b *testing.B) {
	for _, tier := range tiers {
		b.Run(string(tier), func(b *testing.B) {
			r, err := New(Options{TempDir: b.TempDir(), Containment: tier})
			if err != nil {
				b.Skipf("%s: %v", tier, err)
			}
			b.Cleanup(func() { r.Close() })
			job := runner.Job{
				RunID: "bench", CandidateID: "trivial", Trial: 1, Objective: "o",
				Command: []string{"/bin/sh", "-c", `echo done > "$2"`, "sh"},
			}
			self, children := cpuTimes()
			for b.Loop() {
				res, err := r.Run(context.Background(), job)
				if err != nil || !res.Success {
					b.Fatalf("%v %+v", err, res)
				}
			}
			self2, children2 := cpuTimes()
			ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
			b.ReportMetric(ms(self2-self), "self-ms/op")
			b.ReportMetric(ms(children2-children), "children-ms/op")
		})
	}
}

// cpuTimes is the CPU time (user and system) of this process and of its
// waited-for children so far.
func cpuTimes() (self, children time.Duration) {
	var s, c syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &s)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c)
	d := func(u syscall.Rusage) time.Duration {
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	return d(s), d(c)
}
