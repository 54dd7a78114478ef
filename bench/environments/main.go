// Command environments measures what "set up once" saves: the same
// tournament (3 candidates × 10 trials, all at once) whose candidates need
// a set-up that takes -build (10 s by default), played
//
//   - with the set-up in setup: (run in every sandbox, before every trial),
//   - with it in an environment (built once, every trial started from it),
//   - and that again (the environment reused: nothing is built),
//
// through the forge command line, on the Daytona emulator (with a service
// latency: create 1 s, exec 0.5 s, delete 0.3 s) and locally. For each it
// prints the wall time, the sandbox-seconds (every trial's sandbox from its
// create to its delete: the sum of its phases) and the build's time, and
// checks the target: wall time <= build + 1.3 × one trial's time
// (its slowest trial's, the environment reused: the critical path at full
// concurrency). -concurrency N plays N jobs at once instead of all.
//
//	go run ./bench/environments [-build 10s] [-work 2s] [-concurrency N] [-backends emulator,local]
//
// It is a benchmark, not a test: it takes about two minutes.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/forge-run/forge/bench/internal/forgebin"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	build, work time.Duration
	candidates  int
	trials      int
	concurrency int
}

func run(args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("bench/environments", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&c.build, "build", 10*time.Second, "how long the set-up takes (a build step that sleeps)")
	fs.DurationVar(&c.work, "work", 2*time.Second, "how long each trial's candidate works")
	fs.IntVar(&c.candidates, "candidates", 3, "candidates")
	fs.IntVar(&c.trials, "trials", 10, "trials per candidate (all of them run at once)")
	fs.IntVar(&c.concurrency, "concurrency", 0, "jobs at once (0: all of them)")
	backends := fs.String("backends", "emulator,local", "where to play: emulator, local, or both")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bin, tmp, remove, err := forgebin.Build("forge-bench-env-", stderr)
	if err != nil {
		return err
	}
	defer remove()
	at := "all at once"
	if c.concurrency > 0 {
		at = fmt.Sprintf("%d at once", c.concurrency)
	}
	fmt.Fprintf(stdout, "%d candidates × %d trials, %s; set-up %s, each trial's work %s\n\n",
		c.candidates, c.trials, at, c.build, c.work)
	fmt.Fprintf(stdout, "%-9s %-22s %8s %16s %8s\n", "backend", "set-up", "wall", "sandbox-seconds", "build")
	var errs []error
	for _, b := range strings.Split(*backends, ",") {
		if err := playBackend(stdout, c, bin, filepath.Join(tmp, b), b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b, err))
		}
	}
	return errors.Join(errs...)
}

// playBackend plays the three rounds on one backend.
func playBackend(stdout io.Writer, c config, bin, dir, backend string) error {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "TMPDIR=" + os.TempDir()}
	args := []string{"run", "--quiet"}
	if backend == "emulator" {
		srv := daytonatest.NewServer(daytonatest.Options{})
		defer srv.Close()
		srv.SetLatency(daytonatest.OpCreateSandbox, time.Second)
		srv.SetLatency(daytonatest.OpSessionExec, 500*time.Millisecond)
		srv.SetLatency(daytonatest.OpDeleteSandbox, 300*time.Millisecond)
		env = append(env, "DAYTONA_API_KEY="+srv.APIKey(), "DAYTONA_API_URL="+srv.URL())
		args = append(args, "--daytona", "--no-fallback")
		defer func() {
			if n := srv.LiveCount(); n != 0 {
				fmt.Fprintf(stdout, "%-9s %d sandboxes left alive\n", backend, n)
			}
		}()
	} else if backend != "local" {
		return fmt.Errorf("unknown backend %q (emulator or local)", backend)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "work.sh"), fmt.Appendf(nil,
		"test -f \"$FORGE_ENV_DIR/ready\" || test -f ready || { echo not set up >&2; exit 1; }\nsleep %g\necho done > \"$2\"\n", c.work.Seconds()), 0o644); err != nil {
		return err
	}
	step := fmt.Sprintf("sleep %g && echo ok > ready", c.build.Seconds())
	var cands strings.Builder
	for i := range c.candidates {
		fmt.Fprintf(&cands, "  - {id: c%d, script: work.sh}\n", i+1)
	}
	jobs := c.candidates * c.trials
	if c.concurrency > 0 {
		jobs = c.concurrency
	}
	head := fmt.Sprintf("objective: work\ncandidates:\n%s", cands.String())
	perTrial := head + fmt.Sprintf("defaults: {trials: %d, concurrency: %d, setup: [%q]}\n", c.trials, jobs, step)
	once := head + fmt.Sprintf("environments:\n  tools:\n    build: [%q]\ndefaults: {trials: %d, concurrency: %d, environment: tools}\n", step, c.trials, jobs)

	// trial is one trial's time in the environment (its slowest trial's
	// phases, the environment reused); buildSecs and buildWall are the
	// build round's build time and wall time.
	var trial, buildSecs, buildWall float64
	for _, round := range []struct{ name, manifest string }{
		{"setup: every trial", perTrial}, {"environment: build", once}, {"environment: reused", once},
	} {
		if err := os.WriteFile(filepath.Join(dir, "forge.yaml"), []byte(round.manifest), 0o644); err != nil {
			return err
		}
		id := strings.NewReplacer(":", "", " ", "-").Replace(round.name)
		cmd := exec.Command(bin, append(args, "--run-id", id)...)
		cmd.Dir, cmd.Env = dir, env
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %v\n%s", round.name, err, errOut.String())
		}
		wall := time.Since(start).Seconds()
		rec, err := record.Read(filepath.Join(dir, "artifacts", id, record.ResultsFile))
		if err != nil {
			return err
		}
		sandboxSecs, slowest := 0.0, 0.0
		for _, r := range rec.Results {
			if !r.Success {
				return fmt.Errorf("%s: %s trial %d failed: %s %s", round.name, r.CandidateID, r.Trial, r.ErrorKind, r.ErrorMessage)
			}
			p := r.Phases
			t := p.Create + p.Upload + p.Setup + p.Execute + p.Download + p.Cleanup
			sandboxSecs += t
			slowest = max(slowest, t)
		}
		built := "-"
		if len(rec.Environments) > 0 {
			e := rec.Environments[0]
			if e.Reused {
				built = "reused"
				trial = slowest
			} else {
				buildSecs = e.BuildSeconds
				built = fmt.Sprintf("%.1fs", e.BuildSeconds)
			}
		}
		fmt.Fprintf(stdout, "%-9s %-22s %7.1fs %15.0fs %8s\n", backend, round.name, wall, sandboxSecs, built)
		if round.name == "environment: build" {
			buildWall = wall
		}
	}
	if c.concurrency > 0 && c.concurrency < c.candidates*c.trials {
		fmt.Fprintln(stdout)
		return nil // the target is the full concurrency's
	}
	limit := buildSecs + 1.3*trial
	verdict := "met"
	if buildWall > limit {
		verdict = "NOT met"
	}
	fmt.Fprintf(stdout, "%-9s target: the build round's wall %.1fs <= build %.1fs + 1.3 × one trial %.1fs = %.1fs: %s\n\n",
		backend, buildWall, buildSecs, trial, limit, verdict)
	return nil
}
