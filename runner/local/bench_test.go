//go:build linux

package local

import (
	"context"
	"errors"
	"strings"
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
			benchJobs(b, r, trivialJob())
		})
	}
}

// BenchmarkRunInEnvironment is BenchmarkRunTrivial's job run in an
// environment, per tier: read-only (its processes started in a mount
// namespace of their own) where the machine allows it, and writable (the
// same Runner with that turned off), to tell what the read-only view
// costs a job.
func BenchmarkRunInEnvironment(b *testing.B) {
	for _, tier := range tiers {
		for _, view := range []string{"read-only", "writable"} {
			b.Run(string(tier)+"/"+view, func(b *testing.B) {
				r, err := New(Options{TempDir: b.TempDir(), Containment: tier, EnvCache: b.TempDir()})
				if err != nil {
					b.Skipf("%s: %v", tier, err)
				}
				b.Cleanup(func() { r.Close() })
				switch {
				case view == "writable":
					r.platform.roErr = errors.New("turned off by the benchmark")
				case !r.platform.readOnly():
					b.Skipf("%s: %s", tier, r.Describe())
				}
				env := &runner.Environment{Name: "bench", Hash: strings.Repeat("be", 32), Build: []string{"mkdir bin"}}
				if _, err := r.BuildEnvironment(context.Background(), env, nil); err != nil {
					b.Fatal(err)
				}
				job := trivialJob()
				job.Environment = env
				benchJobs(b, r, job)
			})
		}
	}
}

func trivialJob() runner.Job {
	return runner.Job{
		RunID: "bench", CandidateID: "trivial", Trial: 1, Objective: "o",
		Command: []string{"/bin/sh", "-c", `echo done > "$2"`, "sh"},
	}
}

// benchJobs runs job b.N times and reports forge's CPU time per job
// (self-ms/op) and that of the processes it started (children-ms/op).
func benchJobs(b *testing.B, r *Runner, job runner.Job) {
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
