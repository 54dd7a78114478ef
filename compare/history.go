package compare

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// CandidateScore is one candidate's mean score in a past run.
type CandidateScore struct {
	CandidateID string `json:"candidate_id"`
	// Score is the mean over the scored trials; null when none was scored.
	Score *float64 `json:"score"`
}

// Entry is one past run under an output root.
type Entry struct {
	RunID     string    `json:"run_id"`
	Dir       string    `json:"dir"`
	StartedAt time.Time `json:"started_at"`
	Backend   string    `json:"backend"`
	// Trials is the most trials any candidate had (of one task, in a
	// suite); Tasks is a suite's number of tasks.
	Trials int `json:"trials"`
	Tasks  int `json:"tasks,omitempty"`
	// Winner is null when the run had none.
	Winner      *string `json:"winner"`
	Interrupted bool    `json:"interrupted"`
	// Scores are in the run's standings order.
	Scores []CandidateScore `json:"scores"`
	// Skipped says why the directory could not be read as a run; the other
	// fields but RunID and Dir are then empty.
	Skipped string `json:"skipped,omitempty"`
}

// History lists the runs under outRoot, newest first, at most last of them
// (all when last <= 0). A directory without a readable results.json comes
// after them as an Entry whose Skipped says why.
func History(outRoot string, last int) ([]Entry, error) {
	des, err := os.ReadDir(outRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("output root %s does not exist (no runs yet, or another --out?)", outRoot)
	}
	if err != nil {
		return nil, fmt.Errorf("list runs in %s: %w", outRoot, err)
	}
	var runs, skipped []Entry
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		dir := filepath.Join(outRoot, name)
		if !de.IsDir() {
			// A symbolic link to a run directory counts; other files do not.
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue
			}
		}
		e, err := entry(dir)
		if err != nil {
			skipped = append(skipped, Entry{RunID: name, Dir: dir, Skipped: err.Error()})
			continue
		}
		runs = append(runs, e)
	}
	slices.SortStableFunc(runs, func(a, b Entry) int {
		return cmp.Or(b.StartedAt.Compare(a.StartedAt), strings.Compare(b.RunID, a.RunID))
	})
	all := append(runs, skipped...)
	if last > 0 && len(all) > last {
		all = all[:last]
	}
	return all, nil
}

// entry reads the run in dir: its record's summary when that says enough
// (fast at 100,000 trials), else all of it.
func entry(dir string) (Entry, error) {
	path := filepath.Join(dir, record.ResultsFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Entry{}, fmt.Errorf("no %s", record.ResultsFile)
	case err != nil:
		return Entry{}, fmt.Errorf("read %s: %w", record.ResultsFile, err)
	}
	rec, tasks, err := record.DecodeSummary(b)
	if err == nil && (!rec.Finished() || len(rec.Standings) == 0 || rec.Trials == 0) {
		// Unfinished, or older than the record's trials count: its trials
		// say what the summary does not.
		if rec, err = record.Read(path); err == nil {
			tasks = len(rec.Tasks)
		}
	}
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", record.ResultsFile, err)
	}
	e := Entry{
		RunID: cmp.Or(rec.RunID, filepath.Base(dir)), Dir: dir, StartedAt: rec.StartedAt, Backend: rec.Backend,
		Winner: rec.Winner, Interrupted: rec.Interrupted, Scores: []CandidateScore{}, Trials: rec.Trials, Tasks: tasks,
	}
	order, all := sides(rec)
	for _, cid := range order {
		s := all[cid]
		cs := CandidateScore{CandidateID: cid}
		if s.scored() {
			cs.Score = new(s.Score)
		}
		e.Scores = append(e.Scores, cs)
	}
	for _, r := range rec.Results {
		e.Trials = max(e.Trials, r.Trial)
	}
	return e, nil
}

// WriteHistory prints one line per run:
//
//	2026-11-21 15:30  20261121-153000-ab12  local  winner alpha 0.91  beta 0.85 gamma 0.53
//
// The start is in UTC, like run ids; a skipped directory's line says why.
func WriteHistory(w io.Writer, entries []Entry) error {
	idw, bew := 0, 0
	for _, e := range entries {
		if e.Skipped == "" {
			idw = max(idw, len([]rune(id(e.RunID))))
			bew = max(bew, len([]rune(backendText(e))))
		}
	}
	var b strings.Builder
	for _, e := range entries {
		if e.Skipped != "" {
			fmt.Fprintf(&b, "skipped %s: %s\n", id(e.Dir), text.OneLine(e.Skipped))
			continue
		}
		line := fmt.Sprintf("%s  %s  %s  %s", when(e.StartedAt), pad(id(e.RunID), idw), pad(backendText(e), bew),
			scoresText(e))
		if e.Interrupted {
			line += "  (interrupted)"
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-len([]rune(s))))
}

// backendText is "local", "daytona ×5" for several trials, "local 30
// tasks" for a suite.
func backendText(e Entry) string {
	s := id(e.Backend)
	if e.Tasks > 0 {
		s += fmt.Sprintf(" %d tasks", e.Tasks)
	}
	if e.Trials > 1 {
		s += fmt.Sprintf(" ×%d", e.Trials)
	}
	return s
}

// scoresText is "winner alpha 0.91  beta 0.85 gamma 0.53", or
// "no winner  alpha 0.91 beta 0.90".
func scoresText(e Entry) string {
	score := func(cs CandidateScore) string {
		if cs.Score == nil {
			return id(cs.CandidateID) + " —"
		}
		return id(cs.CandidateID) + " " + text.Score(*cs.Score)
	}
	var head string
	var rest []string
	for _, cs := range e.Scores {
		if e.Winner != nil && cs.CandidateID == *e.Winner && head == "" {
			head = "winner " + score(cs)
			continue
		}
		rest = append(rest, score(cs))
	}
	if head == "" {
		head = "no winner"
		if e.Winner != nil {
			head = "winner " + id(*e.Winner)
		}
	}
	if len(rest) == 0 {
		return head
	}
	return head + "  " + strings.Join(rest, " ")
}
