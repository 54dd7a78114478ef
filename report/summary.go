package report

// The standings' columns and the lines every text format shows.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// notesWidth is how many runes of an error the table and Markdown show.
const notesWidth = 50

// column is one column of the standings: header, alignment and cell.
type column struct {
	header string
	align  text.Align
	cell   func(c candidate) string
}

// The columns a format decorates.
const (
	colRank      = "RANK"
	colCandidate = "CANDIDATE"
	colStatus    = "STATUS"
	colNotes     = "NOTES"
)

// columns are the standings' columns, a suite's with SOLVED and PASS@k.
func columns(rec *record.Record) []column {
	cols := []column{
		{colRank, text.Right, candidate.rankText},
		{colCandidate, text.Left, func(c candidate) string { return text.OneLine(c.standing.CandidateID) }},
		{colStatus, text.Left, candidate.statusText},
		{"SCORE", text.Right, candidate.scoreText},
	}
	if suite(rec) {
		cols = append(cols,
			column{"SOLVED", text.Right, func(c candidate) string { return c.solvedText(len(rec.Tasks)) }},
			column{passHeader(rec), text.Right, candidate.passText})
	}
	cols = append(cols,
		column{"SUCCESS", text.Right, candidate.successText},
		column{"RUNTIME", text.Right, candidate.runtimeText},
		column{"TRIALS", text.Right, func(c candidate) string { return fmt.Sprint(c.trials()) }})
	if !suite(rec) {
		cols = append(cols, column{"ARTIFACT", text.Right, candidate.artifactText})
	}
	if slices.ContainsFunc(rec.Standings, func(st record.Standing) bool { return st.Cost != nil }) {
		cols = append(cols, column{"COST", text.Right, candidate.costText})
	}
	return append(cols, column{colNotes, text.Left, func(c candidate) string { return text.Shorten(c.notes(), notesWidth) }})
}

// cells are cs's standings under cols, a row per candidate.
func cells(cols []column, cs []candidate) [][]string {
	rows := make([][]string, len(cs))
	for r, c := range cs {
		rows[r] = make([]string, len(cols))
		for i, col := range cols {
			rows[r][i] = col.cell(c)
		}
	}
	return rows
}

// winnerLine is the record's winner sentence, or says there is none.
func winnerLine(rec *record.Record, cs []candidate) string {
	if s := text.OneLine(rec.WinnerLine); s != "" {
		return s
	}
	if rec.Winner != nil {
		return "winner: " + text.OneLine(*rec.Winner)
	}
	for _, c := range cs {
		if c.successes() > 0 {
			return "winner: none — no candidate is clearly best"
		}
	}
	return "winner: none — no candidate succeeded"
}

// runFacts is the line under a report's title: backend, sizes, wall time.
func runFacts(rec *record.Record, cs []candidate) string {
	parts := []string{}
	if rec.Backend != "" {
		parts = append(parts, "backend "+text.OneLine(rec.Backend))
	}
	maxTrial := 0
	for _, r := range rec.Results {
		maxTrial = max(maxTrial, r.Trial)
	}
	s := text.Count(len(cs), "candidate", "candidates")
	if len(rec.Tasks) > 0 {
		s += " × " + text.Count(len(rec.Tasks), "task", "tasks")
	}
	if maxTrial > 1 {
		s += fmt.Sprintf(" × %d trials", maxTrial)
	}
	parts = append(parts, s)
	if !rec.StartedAt.IsZero() && rec.FinishedAt.After(rec.StartedAt) {
		parts = append(parts, text.Seconds(rec.FinishedAt.Sub(rec.StartedAt).Seconds()))
	}
	if rec.Interrupted {
		parts = append(parts, "interrupted: partial results")
	}
	return strings.Join(parts, " · ")
}

// retriedLine says how many trials took more than one sandbox, or "".
func retriedLine(rec *record.Record) string {
	var names []string
	for _, r := range rec.Results {
		if r.Attempts > 1 {
			names = append(names, fmt.Sprintf("%s (%d attempts)", text.OneLine(runner.TrialName(r.CandidateID, r.TaskID, r.Trial, r.Trial > 1)), r.Attempts))
		}
	}
	if len(names) == 0 {
		return ""
	}
	const shown = 5
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(", … %d more", len(names)-shown)
	}
	return fmt.Sprintf("%d %s needed a second sandbox: %s", len(names), text.Plural(len(names), "trial", "trials"), list)
}
