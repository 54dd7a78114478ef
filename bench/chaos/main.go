// Command chaos plays a suite on the Daytona emulator twice, on a clean
// service and on one that fails the way a cloud does on a bad night
// (daytonatest.BadNight, seeded: the same seed replays the same faults),
// and then on one whose every command start answers 502. It prints, per
// round, forge's exit code, the trials judged and how, how many needed a
// second sandbox, how often each trial's candidate ran, the faults the
// service threw, the sandboxes left alive and the wall time.
//
//	go run ./bench/chaos [-tasks 20] [-trials 3] [-concurrency 8] [-seed 18] [-down 10]
//
// forge runs in this process (cli.Run), as the command line would run it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/cli"
	"github.com/forge-run/forge/internal/testkit/squares"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type round struct {
	name        string
	exit        int
	wall        time.Duration
	rec         *record.Record
	runs        map[string]int
	faults      map[string]int
	alive       int
	creates     int
	stderrLines []string
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench/chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 20, "tasks in the suite")
	trials := fs.Int("trials", 3, "trials of each candidate on each task")
	conc := fs.Int("concurrency", 8, "jobs at once")
	seed := fs.Uint64("seed", 18, "the bad night's seed")
	down := fs.Int("down", 10, "jobs in the round whose every start answers 502 (0: skip it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	specs, err := daytonatest.LoadSpecs()
	if err != nil {
		return err
	}
	play := func(name string, chaos []daytonatest.ChaosRule, chaosSeed uint64, suite func(dir, runs string) error) (*round, error) {
		srv := daytonatest.NewServer(daytonatest.Options{Specs: specs})
		defer srv.Close()
		if len(chaos) > 0 {
			srv.SetChaos(chaosSeed, chaos...)
		}
		dir, err := os.MkdirTemp("", "forge-chaos-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		runs := filepath.Join(dir, "runs.txt")
		if err := suite(dir, runs); err != nil {
			return nil, err
		}
		var errBuf bytes.Buffer
		env := cli.Env{Stdout: io.Discard, Stderr: &errBuf, Getenv: func(k string) string {
			switch k {
			case "DAYTONA_API_KEY":
				return srv.APIKey()
			case "DAYTONA_API_URL":
				return srv.URL()
			case "PATH", "HOME", "TMPDIR":
				return os.Getenv(k)
			}
			return ""
		}}
		began := time.Now()
		code := cli.Run(context.Background(), []string{"run", "-f", filepath.Join(dir, "forge.yaml"), "--out", filepath.Join(dir, "out"),
			"--daytona", "--no-fallback", "--run-id", "r", "--quiet"}, env)
		r := &round{name: name, exit: code, wall: time.Since(began), runs: map[string]int{}, faults: srv.ChaosFired(),
			alive: srv.LiveCount(), creates: srv.Calls(daytonatest.OpCreateSandbox)}
		for _, l := range strings.Split(strings.TrimSpace(errBuf.String()), "\n") {
			if !strings.Contains(l, "retrying in") {
				r.stderrLines = append(r.stderrLines, l)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "out", "r", record.ResultsFile)); err == nil {
			var rec record.Record
			if err := json.Unmarshal(b, &rec); err != nil {
				return nil, err
			}
			r.rec = &rec
		}
		b, _ := os.ReadFile(runs)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				r.runs[l]++
			}
		}
		return r, nil
	}
	suite := func(dir, runs string) error {
		return squares.Suite{Tasks: *tasks, Trials: *trials, Concurrency: *conc, Runs: runs}.Write(dir)
	}
	clean, err := play("clean", nil, 0, suite)
	if err != nil {
		return err
	}
	night, err := play("bad night", daytonatest.BadNight(), *seed, suite)
	if err != nil {
		return err
	}
	rounds := []*round{clean, night}
	if *down > 0 {
		r, err := play("every start 502", []daytonatest.ChaosRule{{Ops: []string{daytonatest.OpSessionExec}, Rate: 1,
			Fault: daytonatest.Fault{Status: 502}}}, 1, func(dir, runs string) error {
			return squares.Suite{Tasks: 1, Trials: 1, Concurrency: *down, Candidates: *down, Runs: runs}.Write(dir)
		})
		if err != nil {
			return err
		}
		rounds = append(rounds, r)
	}

	fmt.Fprintf(stdout, "%d candidates × %d tasks × %d trials, concurrency %d; bad night seed %d\n\n", 2, *tasks, *trials, *conc, *seed)
	fmt.Fprintln(stdout, "| round | exit | trials | ok / failed / infra / cancelled | needed a 2nd sandbox | candidate runs (max per trial) | faults thrown | sandboxes created / left | wall |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rounds {
		var ok, failed, infra, cancelled, retried int
		if r.rec != nil {
			for _, res := range r.rec.Results {
				switch {
				case res.Success:
					ok++
				case res.ErrorKind == runner.ErrInfra:
					infra++
				case res.ErrorKind == runner.ErrCancelled:
					cancelled++
				default:
					failed++
				}
				if res.Attempts > 1 {
					retried++
				}
			}
		}
		total, most := 0, 0
		for _, n := range r.runs {
			total += n
			most = max(most, n)
		}
		faults := 0
		for _, n := range r.faults {
			faults += n
		}
		trialsN := 0
		if r.rec != nil {
			trialsN = len(r.rec.Results)
		}
		fmt.Fprintf(stdout, "| %s | %d | %d | %d / %d / %d / %d | %d | %d (%d) | %d | %d / %d | %.1f s |\n", r.name, r.exit, trialsN,
			ok, failed, infra, cancelled, retried, total, most, faults, r.creates, r.alive, r.wall.Seconds())
	}
	fmt.Fprintln(stdout)
	if clean.rec != nil && night.rec != nil {
		same := len(clean.rec.Results) == len(night.rec.Results)
		type key struct {
			c, t string
			n    int
		}
		want := map[key]record.Trial{}
		for _, r := range clean.rec.Results {
			want[key{r.CandidateID, r.TaskID, r.Trial}] = r
		}
		for _, r := range night.rec.Results {
			c := want[key{r.CandidateID, r.TaskID, r.Trial}]
			if r.Success != c.Success || (r.Score == nil) != (c.Score == nil) || r.Score != nil && *r.Score != *c.Score {
				same = false
			}
		}
		fmt.Fprintf(stdout, "clean:     %s\nbad night: %s\nsame per-trial success and score: %v\n", clean.rec.WinnerLine, night.rec.WinnerLine, same)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range night.faults {
				if !yield(k) {
					return
				}
			}
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, night.faults[k]))
		}
		fmt.Fprintf(stdout, "bad night's faults: %s\n", strings.Join(parts, ", "))
	}
	if *down > 0 {
		fmt.Fprintf(stdout, "every start 502, stderr:\n  %s\n", strings.Join(rounds[len(rounds)-1].stderrLines, "\n  "))
	}
	return nil
}
