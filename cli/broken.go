package cli

import (
	"path/filepath"
	"slices"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// brokenImages reads an incomplete run: a line per image whose failed
// build is why some of its tasks were not played (the tasks, the reason,
// the file to fix, the log), and the candidates that did not run for other
// reasons, which replaying may finish.
func brokenImages(rec *record.Record, out string) (broken, replayable []string) {
	failed := map[string]record.EnvironmentBuilt{}
	for _, b := range rec.Environments {
		if b.Error != "" {
			failed[b.Hash] = b
		}
	}
	// A candidate's task is explained when every trial of it was refused
	// by a failed build.
	type unit struct{ candidate, task string }
	explained := map[unit]bool{}
	tasks := map[string][]string{} // a failed build's hash: its tasks
	for i := range rec.Results {
		r := &rec.Results[i]
		u := unit{r.CandidateID, r.TaskID}
		_, bad := failed[r.Environment]
		if r.ErrorKind.Scored() || !bad {
			explained[u] = false
			continue
		}
		if _, seen := explained[u]; !seen {
			explained[u] = true
		}
		if !slices.Contains(tasks[r.Environment], r.TaskID) {
			tasks[r.Environment] = append(tasks[r.Environment], r.TaskID)
		}
	}
	for _, u := range rec.Incomplete {
		if len(u.TaskIDs) == 0 || slices.ContainsFunc(u.TaskIDs, func(task string) bool { return !explained[unit{u.CandidateID, task}] }) {
			replayable = append(replayable, u.CandidateID)
		}
	}
	for _, b := range rec.Environments {
		if b.Error == "" || len(tasks[b.Hash]) == 0 {
			continue
		}
		ts := tasks[b.Hash]
		what := "task " + ts[0] + "'s image"
		if len(ts) > 1 {
			what = "the image of tasks " + text.AndList(ts)
		}
		line := what + ": " + b.Error
		if b.Source != "" {
			line += "; fix " + b.Source
		}
		if b.Log != "" {
			line += " (its build log: " + filepath.Join(out, rec.RunID, filepath.FromSlash(b.Log)) + ")"
		}
		broken = append(broken, line)
	}
	return broken, replayable
}
