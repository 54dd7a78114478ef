//go:build linux

package local

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// BenchmarkRunTrivial measures the local backend's overhead per job (working
// directory, containment, one sh process, read back, cleanup) for each tier:
// wall time, and CPU time of forge's own process (self-ms/op) and of the
// processes it started (children-ms/op: the sh and the tier's own, such as
// the PID namespace's init).
func BenchmarkRunTrivial(b *testing.B) {
	for _, tier := range tiers {
		b.Run(string(tier), func(b *testing.B) { benchJobs(b, benchRunner(b, tier), trivialJob()) })
	}
}

// benchRunner is a Runner of tier for a benchmark, closed when it ends;
// the benchmark is skipped where the tier is not to be had.
func benchRunner(b *testing.B, tier Containment) *Runner {
	r, err := New(Options{TempDir: localtest.TempDir(b), Containment: tier})
	if err != nil {
		b.Skipf("%s: %v", tier, err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkRunInEnvironment is BenchmarkRunTrivial's job run in an
// environment, per tier, read-only (its processes started in a mount
// namespace of their own) and writable (a second Runner with that turned
// off), one of each in turn so that the load of a shared machine weighs
// on both alike: what the read-only view costs a job, in wall time
// (ro-ms/op, rw-ms/op, and the median of the pairs' differences,
// extra-ms/op) and in forge's CPU time (ro-self-ms/op, rw-self-ms/op)
// and its children's (ro-children-ms/op, rw-children-ms/op). Skipped
// where jobs cannot see environments read-only.
func BenchmarkRunInEnvironment(b *testing.B) {
	for _, tier := range tiers {
		b.Run(string(tier), func(b *testing.B) {
			cache := localtest.TempDir(b)
			env := &runner.Environment{Name: "bench", Hash: strings.Repeat("be", 32), Build: []string{"mkdir bin"}}
			job := trivialJob()
			job.Environment = env
			var rs [2]*Runner // writable, read-only: extra is what read-only adds
			for i := range rs {
				r, err := New(Options{TempDir: localtest.TempDir(b), Containment: tier, EnvCache: cache})
				if err != nil {
					b.Skipf("%s: %v", tier, err)
				}
				b.Cleanup(func() { r.Close() })
				if !r.platform.readOnly() {
					b.Skipf("%s: %s", tier, r.Describe())
				}
				if i == 0 {
					r.platform.roErr = errors.New("turned off by the benchmark")
				}
				if _, err := r.BuildEnvironment(context.Background(), env, nil); err != nil {
					b.Fatal(err)
				}
				rs[i] = r
			}
			benchPair(b, [2]string{"rw", "ro"}, "extra", func(i int) (runner.Result, error) {
				return rs[i].Run(context.Background(), job)
			}, nil)
		})
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

// benchPair plays run(0) and run(1) in turn each round, so that a shared
// machine's load weighs on both alike, and reports for each, under its
// name, its wall time per op (<name>-ms/op), forge's CPU time
// (<name>-self-ms/op) and that of the processes it started
// (<name>-children-ms/op); and the median of the rounds' run(1) less
// run(0) (<extra>-ms/op). A run must succeed, and pass ok when given.
func benchPair(b *testing.B, names [2]string, extra string, run func(i int) (runner.Result, error), ok func(i int, res runner.Result) bool) {
	var wall, self, children [2]time.Duration
	var diffs []time.Duration
	for b.Loop() {
		var took [2]time.Duration
		for i := range 2 {
			s0, c0 := cpuTimes()
			begin := time.Now()
			res, err := run(i)
			took[i] = time.Since(begin)
			s1, c1 := cpuTimes()
			if err != nil || !res.Success || ok != nil && !ok(i, res) {
				b.Fatalf("%s: %v %+v", names[i], err, res)
			}
			wall[i] += took[i]
			self[i] += s1 - s0
			children[i] += c1 - c0
		}
		diffs = append(diffs, took[1]-took[0])
	}
	slices.Sort(diffs)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	for i, name := range names {
		b.ReportMetric(ms(wall[i]), name+"-ms/op")
		b.ReportMetric(ms(self[i]), name+"-self-ms/op")
		b.ReportMetric(ms(children[i]), name+"-children-ms/op")
	}
	b.ReportMetric(diffs[len(diffs)/2].Seconds()*1000, extra+"-ms/op")
	b.ReportMetric(0, "ns/op") // a pair per op: the metrics above say it
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
