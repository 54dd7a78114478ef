package view

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// spec describes a synthetic run.
type spec struct {
	id         string
	candidates []string
	tasks      int // 0: no suite
	trials     int
	// files writes each job's logs and artifact (off for the 100,000-trial
	// benchmark, which reads one trial's files only).
	files bool
	start time.Time
}

// fail says whether candidate c fails task t's trial n: c's index in the
// list makes it weaker.
func fail(ci, t, n int) bool { return (t*7+n*3+ci*5)%(ci+3) == 0 }

// makeRun writes a finished run as forge does: results.json one result a
// line, each job's stdout.log, stderr.log and artifact.
func makeRun(tb testing.TB, out string, s spec) (*record.Record, string) {
	tb.Helper()
	dir := filepath.Join(out, s.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	rec := &record.Record{SchemaVersion: record.SchemaVersion, RunID: s.id, Objective: "synthetic", Backend: "local",
		ManifestPath: "forge.yaml", StartedAt: s.start, FinishedAt: s.start.Add(time.Minute), Trials: s.trials}
	var tasks []scoring.Task
	taskIDs := []string{""}
	if s.tasks > 0 {
		taskIDs = nil
		for t := range s.tasks {
			id := fmt.Sprintf("task-%05d", t)
			taskIDs = append(taskIDs, id)
			tasks = append(tasks, scoring.Task{ID: id})
			rec.Tasks = append(rec.Tasks, record.TaskInfo{ID: id, Weight: 1})
		}
	}
	excerpt := strings.Repeat("output line of a busy candidate\n", 16)
	for ci, c := range s.candidates {
		for t, task := range taskIDs {
			for n := 1; n <= s.trials; n++ {
				rel := c
				if task != "" {
					rel += "/" + task
				}
				if s.trials > 1 {
					rel += fmt.Sprintf("/trial-%d", n)
				}
				exit := 0
				r := record.Trial{Result: runner.Result{CandidateID: c, TaskID: task, Trial: n, Backend: "local", Success: true, ExitCode: &exit,
					Output: excerpt, OutputBytes: int64(len(excerpt)), OutputPath: rel + "/stdout.log", StderrPath: rel + "/stderr.log",
					ArtifactContent: "# done\n", ArtifactPath: rel + "/out.md", ArtifactBytes: 7,
					RuntimeSeconds: 1 + float64((t+n+ci)%7)/10, JobSeconds: 2,
					Phases:    runner.Phases{Create: 0.1, Execute: 1.5, Cleanup: 0.2},
					StartedAt: s.start, FinishedAt: s.start.Add(2 * time.Second)}, Attempts: 1}
				if fail(ci, t, n) {
					exit = 1
					r.Success, r.ErrorKind, r.ErrorMessage = false, runner.ErrCandidateFailed, fmt.Sprintf("%s broke on %s", c, task)
					r.Stderr = "Traceback: boom\n"
				}
				rec.Results = append(rec.Results, r)
				if s.files {
					jd := filepath.Join(dir, filepath.FromSlash(rel))
					must(tb, os.MkdirAll(jd, 0o755))
					must(tb, os.WriteFile(filepath.Join(jd, "stdout.log"), []byte(excerpt), 0o644))
					must(tb, os.WriteFile(filepath.Join(jd, "stderr.log"), []byte(r.Stderr), 0o644))
					must(tb, os.WriteFile(filepath.Join(jd, "out.md"), []byte("# done\n"), 0o644))
				}
			}
		}
	}
	out2 := scoring.ScoreSuite(scoring.Config{}, scoring.Suite{Candidates: s.candidates, Tasks: tasks}, rec.Results)
	out2.Apply(rec.Results)
	rec.Standings, rec.Winner, rec.WinnerLine, rec.Comparison = out2.Standings, out2.Winner, out2.WinnerLine, out2.Comparison
	rec.Incomplete, rec.TaskMatrix, rec.HeadToHead = out2.Incomplete, out2.Tasks, out2.HeadToHead
	must(tb, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	return rec, dir
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
