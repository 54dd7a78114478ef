// Command daytona benchmarks forge's Daytona backend against the offline
// emulator (runner/daytona/daytonatest) with a realistic service latency:
// create 1 s, exec 0.5 s, delete 0.3 s by default.
//
// It prints the wall time of N candidates run at once divided by the ideal
// critical path (one job's create+upload+exec+download+delete, run alone),
// the speed-up over running them one after another, and the creation pace the default rate limit enforces.
//
//	go run ./bench/daytona [-n 50] [-concurrency 50] [-rate 1000] [-sequential=true] [-calls] [-dir /dev/shm] [-chaos 18]
//
// With -chaos SEED every round plays on a bad night (daytonatest.BadNight,
// seeded): the concurrent round then also says how many jobs did not
// succeed (none should: the backend rides out every fault of the night).
//
// It is a benchmark, not a test: it takes a few minutes, most of them in
// the sequential baseline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	dir                     string
	n, concurrency          int
	rate                    float64
	create, exec, delete    time.Duration
	sequential, defaultRate bool
	chaos                   uint64
}

func run(args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("bench/daytona", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.n, "n", 50, "candidates")
	fs.IntVar(&c.concurrency, "concurrency", 50, "jobs at once")
	fs.Float64Var(&c.rate, "rate", 1000, "sandbox creations per second allowed (raised so it is not the bottleneck)")
	fs.DurationVar(&c.create, "create-latency", time.Second, "emulated latency of POST /sandbox")
	fs.DurationVar(&c.exec, "exec-latency", 500*time.Millisecond, "emulated latency of starting a command")
	fs.DurationVar(&c.delete, "delete-latency", 300*time.Millisecond, "emulated latency of DELETE /sandbox")
	fs.BoolVar(&c.sequential, "sequential", true, "also run the jobs one after another")
	fs.BoolVar(&c.defaultRate, "default-rate", true, "also run with the default creation rate limit and show its pace")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the concurrent round to this file")
	fs.StringVar(&c.dir, "dir", "", "where the emulated sandboxes keep their files (default: a new temporary directory);\n"+
		"a tmpfs such as /dev/shm keeps the host disk's metadata costs, which real sandboxes do not put on forge's machine, out of the measurement")
	calls := fs.Bool("calls", false, "print the concurrent round's requests per route: count, mean and worst time in the emulator")
	fs.Uint64Var(&c.chaos, "chaos", 0, "play every round on a bad night with this seed (0: a clean service)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	specs, err := daytonatest.LoadSpecs()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "forge-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "cand.sh")
	if err := os.WriteFile(script, []byte("echo \"[$FORGE_CANDIDATE_ID] done\"\necho result > \"$2\"\n"), 0o644); err != nil {
		return err
	}
	jobs := make([]runner.Job, c.n)
	for i := range jobs {
		jobs[i] = runner.Job{
			RunID: "bench", CandidateID: fmt.Sprintf("c%02d", i), Trial: 1, Objective: "benchmark",
			Command: []string{"sh", "cand.sh"}, Files: []runner.File{{Src: script, Dst: "cand.sh"}},
			Timeout: time.Minute,
		}
	}

	where := "a temporary directory"
	if c.dir != "" {
		where = c.dir
	}
	fmt.Fprintf(stdout, "emulated latency: create %s, exec %s, delete %s; %d candidates; sandboxes' files in %s\n", c.create, c.exec, c.delete, c.n, where)

	// The ideal critical path: one job alone (best of three).
	var ideal time.Duration
	var idealRes runner.Result
	for i := 0; i < 3; i++ {
		st, err := round(specs, c, c.rate, jobs[:1], 1)
		if err != nil {
			return err
		}
		if ideal == 0 || st.wall < ideal {
			ideal, idealRes = st.wall, st.results[0]
		}
	}
	p := idealRes.Phases
	fmt.Fprintf(stdout, "ideal critical path (one job alone): %.3fs  [create %.3f upload %.3f execute %.3f download %.3f delete %.3f]\n",
		ideal.Seconds(), p.Create, p.Upload, p.Execute, p.Download, p.Cleanup)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	par, err := round(specs, c, c.rate, jobs, c.concurrency)
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range par.results {
		if !r.Success {
			failed++
		}
	}
	fmt.Fprintf(stdout, "%d jobs at concurrency %d (create rate %g/s): wall %.3fs = %.3f x ideal (target <= 1.15); peak live sandboxes %d, left alive %d\n",
		c.n, c.concurrency, c.rate, par.wall.Seconds(), par.wall.Seconds()/ideal.Seconds(), par.peak, par.left)
	var mean, worst runner.Phases
	for _, r := range par.results {
		q := r.Phases
		mean.Create += q.Create / float64(len(par.results))
		mean.Upload += q.Upload / float64(len(par.results))
		mean.Execute += q.Execute / float64(len(par.results))
		mean.Download += q.Download / float64(len(par.results))
		mean.Cleanup += q.Cleanup / float64(len(par.results))
		worst.Create, worst.Upload = max(worst.Create, q.Create), max(worst.Upload, q.Upload)
		worst.Execute, worst.Download, worst.Cleanup = max(worst.Execute, q.Execute), max(worst.Download, q.Download), max(worst.Cleanup, q.Cleanup)
	}
	fmt.Fprintf(stdout, "  phases, mean [create %.3f upload %.3f execute %.3f download %.3f delete %.3f]\n", mean.Create, mean.Upload, mean.Execute, mean.Download, mean.Cleanup)
	fmt.Fprintf(stdout, "  phases, worst [create %.3f upload %.3f execute %.3f download %.3f delete %.3f]\n", worst.Create, worst.Upload, worst.Execute, worst.Download, worst.Cleanup)

	total := 0
	for _, call := range par.calls {
		if call.Op != daytonatest.OpListSandboxes { // the run's closing sweep, not a job's
			total++
		}
	}
	fmt.Fprintf(stdout, "  API calls per job %.2f (%d in all, the closing sweep aside); jobs that did not succeed: %d\n",
		float64(total)/float64(len(jobs)), total, failed)
	if *calls {
		printCalls(stdout, par.calls)
	}

	if c.sequential {
		seq, err := round(specs, c, c.rate, jobs, 1)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "one after another (the original loop): wall %.3fs; speed-up %.1fx\n",
			seq.wall.Seconds(), seq.wall.Seconds()/par.wall.Seconds())
	}

	if c.defaultRate {
		def, err := round(specs, c, 0, jobs, c.concurrency)
		if err != nil {
			return err
		}
		span := def.lastCreate.Sub(def.firstCreate)
		fmt.Fprintf(stdout, "default create rate (%g/s): %d creations in %.3fs = %.2f/s after the first; wall %.3fs = %.3f x ideal\n",
			daytona.DefaultCreateRate, def.creates, span.Seconds(), float64(def.creates-1)/span.Seconds(),
			def.wall.Seconds(), def.wall.Seconds()/ideal.Seconds())
	}
	return nil
}

// stats is one round's measurements.
type stats struct {
	wall                    time.Duration
	results                 []runner.Result
	peak, left, creates     int
	firstCreate, lastCreate time.Time
	calls                   []daytonatest.Call
}

// printCalls prints, per route, how many requests the emulator got and how
// long it took to answer them (latency injected included).
func printCalls(w io.Writer, calls []daytonatest.Call) {
	type agg struct {
		n          int
		sum, worst time.Duration
	}
	by := map[string]*agg{}
	var ops []string
	for _, c := range calls {
		a := by[c.Op]
		if a == nil {
			a = &agg{}
			by[c.Op] = a
			ops = append(ops, c.Op)
		}
		d := c.End.Sub(c.Start)
		a.n++
		a.sum += d
		a.worst = max(a.worst, d)
	}
	sort.Strings(ops)
	for _, op := range ops {
		a := by[op]
		fmt.Fprintf(w, "  %-30s %4d calls, mean %.3fs, worst %.3fs\n", op, a.n, (a.sum / time.Duration(a.n)).Seconds(), a.worst.Seconds())
	}
}

// round runs jobs against a fresh emulator, limit at a time.
func round(specs *daytonatest.Specs, c config, rate float64, jobs []runner.Job, limit int) (stats, error) {
	so := daytonatest.Options{Specs: specs}
	if c.dir != "" {
		d, err := os.MkdirTemp(c.dir, "forge-bench-sandboxes-")
		if err != nil {
			return stats{}, err
		}
		defer os.RemoveAll(d)
		so.Dir = d
	}
	srv := daytonatest.NewServer(so)
	defer srv.Close()
	if c.chaos != 0 {
		srv.SetChaos(c.chaos, daytonatest.BadNight()...)
	}
	srv.SetLatency(daytonatest.OpCreateSandbox, c.create)
	srv.SetLatency(daytonatest.OpSessionExec, c.exec)
	srv.SetLatency(daytonatest.OpDeleteSandbox, c.delete)
	ctx := context.Background()
	r, err := daytona.New(ctx, daytona.Options{
		APIKey: srv.APIKey(), APIURL: srv.URL(), RunID: "bench", CreateRate: rate,
	})
	if err != nil {
		return stats{}, err
	}
	st := stats{results: make([]runner.Result, len(jobs))}
	var g errgroup.Group
	g.SetLimit(limit)
	start := time.Now()
	for i, j := range jobs {
		g.Go(func() error {
			res, err := r.Run(ctx, j)
			st.results[i] = res
			if err == nil && !res.Success && c.chaos == 0 { // on a bad night, counted
				err = fmt.Errorf("%s: %s: %s", j.CandidateID, res.ErrorKind, res.ErrorMessage)
			}
			return err
		})
	}
	err = g.Wait()
	st.wall = time.Since(start)
	err = errors.Join(err, r.Close(ctx))
	st.peak, st.left = srv.PeakLive(), srv.LiveCount()
	var creates []time.Time
	st.calls = srv.CallLog()
	for _, call := range st.calls {
		if call.Op == daytonatest.OpCreateSandbox {
			creates = append(creates, call.Start)
		}
	}
	sort.Slice(creates, func(i, j int) bool { return creates[i].Before(creates[j]) })
	if len(creates) > 0 {
		st.creates, st.firstCreate, st.lastCreate = len(creates), creates[0], creates[len(creates)-1]
	}
	if v := srv.Violations(); len(v) > 0 {
		err = errors.Join(err, fmt.Errorf("OpenAPI violations: %v", v))
	}
	return st, err
}
