// Command harbor measures a suite whose every task has its own image: N
// Harbor tasks (each a Dockerfile of its own, its image build standing in
// for -build on the Daytona emulator) played by one agent, once each,
// through the forge command line, with the task images built
//
//   - one at a time (--max-builds 1: the cautious alternative),
//   - a few at a time (--max-builds 4, forge's default),
//   - all at once (--max-builds N),
//   - and again with every snapshot there (nothing is built).
//
// For each it prints the wall time, the builds' total time, the most
// snapshots building at once (as the emulator saw them) and each job's
// verify phase (mean). Every trial must be judged by its task's verifier
// (reward 1).
//
//	go run ./bench/harbor [-tasks 24] [-build 3s]
//
// It is a benchmark, not a test: it takes about a minute.
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
	"strconv"
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

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench/harbor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 24, "Harbor tasks, each its own image")
	build := fs.Duration("build", 3*time.Second, "how long one image takes to build")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !daytonatest.RootFS() {
		return errors.New("the emulator needs root and overlayfs to give sandboxes /app, /tests and /logs")
	}
	bin, tmp, remove, err := forgebin.Build("forge-bench-harbor-", stderr)
	if err != nil {
		return err
	}
	defer remove()
	dir := filepath.Join(tmp, "suite")
	if err := writeSuite(dir, *tasks); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d Harbor tasks, each its own image (a build takes %s), one agent, one trial each\n\n", *tasks, *build)
	fmt.Fprintf(stdout, "%-22s %8s %10s %16s %12s\n", "images built", "wall", "builds", "building at once", "verify/job")
	srv := daytonatest.NewServer(daytonatest.Options{SnapshotBuildDelay: *build})
	defer srv.Close()
	rounds := []struct {
		name  string
		max   int
		fresh bool
	}{{"one at a time", 1, true}, {"4 at a time (default)", 4, true}, {"all at once", *tasks, true}, {"none (all reused)", 4, false}}
	for i, r := range rounds {
		if r.fresh && i > 0 { // the snapshots the round before built
			srv.Close()
			srv = daytonatest.NewServer(daytonatest.Options{SnapshotBuildDelay: *build})
		}
		peak := watchBuilds(srv)
		id := "r" + strconv.Itoa(i)
		cmd := exec.Command(bin, "run", "--daytona", "--no-fallback", "--quiet", "--run-id", id, "--max-builds", strconv.Itoa(r.max), "--concurrency", strconv.Itoa(*tasks))
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir(), "DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()}
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		most := peak()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", r.name, err, errOut.String())
		}
		rec, err := record.Read(filepath.Join(dir, "artifacts", id, record.ResultsFile))
		if err != nil {
			return err
		}
		builds, verify := 0.0, 0.0
		for _, e := range rec.Environments {
			if !e.Reused {
				builds += e.BuildSeconds
			}
		}
		for _, res := range rec.Results {
			if res.Reward == nil || *res.Reward != 1 {
				return fmt.Errorf("%s: %s: %s %q, reward %v", r.name, res.TaskID, res.ErrorKind, res.ErrorMessage, res.Reward)
			}
			verify += res.Phases.Verify / float64(len(rec.Results))
		}
		fmt.Fprintf(stdout, "%-22s %7.1fs %9.1fs %16d %11.2fs\n", r.name, wall.Seconds(), builds, most, verify)
	}
	if n := srv.LiveCount(); n != 0 {
		return fmt.Errorf("%d sandboxes left alive", n)
	}
	return nil
}

// watchBuilds samples the emulator's snapshots every 20 ms until the
// returned func is called, which says the most that were building at once.
func watchBuilds(srv *daytonatest.Server) func() int {
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		most := 0
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			n := 0
			for _, s := range srv.Snapshots() {
				if s.State == "building" || s.State == "pulling" || s.State == "pending" {
					n++
				}
			}
			most = max(most, n)
			select {
			case <-stop:
				done <- most
				return
			case <-t.C:
			}
		}
	}()
	return func() int { close(stop); return <-done }
}

// writeSuite writes n Harbor tasks, each with a Dockerfile of its own, and
// a manifest whose agent solves them all.
func writeSuite(dir string, n int) error {
	files := map[string]string{
		"forge.yaml": "harbor: tasks\ncandidates:\n  - id: agent\n    script: agent.sh\nscoring:\n  - type: verifier\n",
		"agent.sh":   "echo done > done.txt\n",
	}
	for i := range n {
		t := fmt.Sprintf("tasks/t%03d/", i)
		files[t+"task.toml"] = "version = \"1.0\"\n[metadata]\ndifficulty = \"easy\"\n"
		files[t+"instruction.md"] = "Write done into /app/done.txt.\n"
		files[t+"environment/Dockerfile"] = fmt.Sprintf("FROM python:3.12-slim\nRUN echo image %d > /etc/task-image\nWORKDIR /app\n", i)
		files[t+"tests/test.sh"] = "mkdir -p /logs/verifier\ngrep -qx done /app/done.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	}
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
