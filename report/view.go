package report

// What forge view shows of a run, in the reports' own words: the viewer
// renders them and derives none.

import (
	"bytes"
	"fmt"
	"html/template"
	"math"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// Summary is a run as the reports describe it.
type Summary struct {
	// Facts is the line under a report's title.
	Facts string
	// Header, Numeric (right-aligned) and Rows are the standings table's,
	// candidates best first.
	Header  []string
	Numeric []bool
	Rows    []SummaryRow
	// WinnerLine is the run's verdict; Winner says there is a winner.
	WinnerLine string
	Winner     bool
	// Notes are what else the table says under the verdict.
	Notes []string
	// Comparison is rank 1 against rank 2, as name and value.
	Comparison [][2]string
	// HeadToHead is a suite's pairwise record beyond two candidates.
	HeadToHead *Grid
}

// SummaryRow is one candidate's line of the standings.
type SummaryRow struct {
	Candidate string
	Cells     []string
	// Health is ok, partial or failed (the reports' colour).
	Health string
	Winner bool
	// Cost is the candidate's cost sentence; "" without costs.
	Cost string
}

// Grid is a table of plain cells.
type Grid struct {
	Header []string
	Rows   [][]string
}

// Summarise describes rec as the table report does.
func Summarise(rec *record.Record) Summary {
	cs := candidates(rec)
	cols := columns(rec)
	s := Summary{Facts: runFacts(rec, cs), WinnerLine: winnerLine(rec, cs), Winner: rec.Winner != nil}
	for _, col := range cols {
		s.Header = append(s.Header, col.header)
		s.Numeric = append(s.Numeric, col.align == text.Right)
	}
	rows := cells(cols, cs)
	for i, c := range cs {
		s.Rows = append(s.Rows, SummaryRow{Candidate: c.standing.CandidateID, Cells: rows[i], Health: string(c.health()),
			Winner: c.winner, Cost: c.costLine()})
	}
	if rec.Interrupted {
		s.Notes = append(s.Notes, "run interrupted: these are partial results")
	}
	if rec.BudgetReached != nil {
		s.Notes = append(s.Notes, text.OneLine(rec.BudgetReached.String()))
	}
	for _, n := range rec.NotRun {
		s.Notes = append(s.Notes, fmt.Sprintf("not run: %s (%s)", text.OneLine(n.CandidateID), text.OneLine(n.Reason)))
	}
	for _, u := range rec.Incomplete {
		s.Notes = append(s.Notes, fmt.Sprintf("incomplete: %s (%s)", text.OneLine(u.CandidateID), text.OneLine(u.Reason)))
	}
	if l := retriedLine(rec); l != "" {
		s.Notes = append(s.Notes, l)
	}
	if n := len(rec.UndeletedSandboxes); n > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d sandbox(es) could not be deleted (forge gc deletes them)", n))
	}
	for _, f := range comparisonFacts(rec) {
		s.Comparison = append(s.Comparison, [2]string{f.Name, f.Value})
	}
	if len(rec.HeadToHead) >= 2 && len(rec.TaskMatrix) > 0 {
		h, rows, _ := headToHeadRows(rec)
		s.HeadToHead = &Grid{Header: h, Rows: rows}
	}
	return s
}

// MatrixCell is a candidate's result on a task: its text, the heat map's CSS
// class and a title in words.
func MatrixCell(task string, c record.TaskCell) (cell, class, title string) {
	class, score := "heatnone", "no score"
	if c.Score != nil {
		class = fmt.Sprintf("heat%d", int(math.Round(*c.Score*10)))
		score = "score " + text.Score(*c.Score)
	}
	title = fmt.Sprintf("%s on %s: %s, %d of %d trials passed", text.OneLine(c.CandidateID), text.OneLine(task), score, c.Passes, c.Trials)
	return cellText(c), class, title
}

// Charts renders the HTML report's charts of rec as inline SVG, with no script
// and no style attribute: StyleSheet's classes colour them.
func Charts(rec *record.Record) (template.HTML, error) {
	cs := candidates(rec)
	if len(cs) == 0 {
		return "", nil
	}
	tmpl, err := htmlTemplates(`{{template "charts" .}}`)
	if err != nil {
		return "", err
	}
	p := htmlPage{Score: newScoreChart(cs), Cost: newCostChart(cs), Runtime: newRuntimeChart(cs)}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, p); err != nil {
		return "", fmt.Errorf("render charts: %w", err)
	}
	// html/template escaped every value from the record.
	return template.HTML(b.String()), nil
}

// StyleSheet is the HTML report's CSS.
func StyleSheet() string { return htmlCSS }
