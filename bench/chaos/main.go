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
	"github.com/forge-run/forge/forge"
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
	rec         *forge.Record
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
		if b, err := os.ReadFile(filepath.Join(dir, "out", "r", forge.ResultsFile)); err == nil {
			var rec forge.Record
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
	suite := func(dir, runs string) error { return writeSuite(dir, runs, *tasks, *trials, *conc) }
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
			Fault: daytonatest.Fault{Status: 502}}}, 1, func(dir, runs string) error { return writeSuite(dir, runs, 1, 1, *down, *down) })
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
		want := map[key]runner.Result{}
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

// writeSuite writes a suite of tasks × 2 candidates (one candidate per task
// beyond that when cands is given): "exact" squares every task's number,
// "rough" only the even ones. Every candidate appends its trial
// to runs.
func writeSuite(dir, runs string, tasks, trials, conc int, cands ...int) error {
	n := 2
	if len(cands) > 0 {
		n = cands[0]
	}
	var t strings.Builder
	for i := 1; i <= tasks; i++ {
		fmt.Fprintf(&t, "{\"id\": \"t%d\", \"n\": %d, \"expected\": \"%d\"}\n", i, i, i*i)
	}
	var m strings.Builder
	fmt.Fprintf(&m, "objective: Square the number\ntasks_file: tasks.jsonl\ndefaults:\n  trials: %d\n  concurrency: %d\n  env: {RUNS: %q}\ncandidates:\n", trials, conc, runs)
	for i := range n {
		script := "rough.sh"
		if i%2 == 0 {
			script = "exact.sh"
		}
		fmt.Fprintf(&m, "  - {id: c%d, script: %s}\n", i+1, script)
	}
	m.WriteString("scoring:\n  - type: artifact\n    checks: [{equals_task: expected}]\n")
	files := map[string]string{
		"forge.yaml":  m.String(),
		"tasks.jsonl": t.String(),
		"exact.sh": `echo "$FORGE_CANDIDATE_ID $FORGE_TASK_ID $FORGE_TRIAL" >> "$RUNS"
n=$(sed 's/.*"n": *\([0-9]*\).*/\1/' "$FORGE_TASK")
echo $((n * n)) > "$2"
`,
		"rough.sh": `echo "$FORGE_CANDIDATE_ID $FORGE_TASK_ID $FORGE_TRIAL" >> "$RUNS"
n=$(sed 's/.*"n": *\([0-9]*\).*/\1/' "$FORGE_TASK")
case $n in *[13579]) echo $((n * n + 1)) > "$2" ;; *) echo $((n * n)) > "$2" ;; esac
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
