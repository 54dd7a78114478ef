package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

//go:embed html.tmpl
var htmlTemplate string

// htmlCSS is the HTML report's stylesheet: inline in the report, served as
// a file by forge view (StyleSheet).
//
//go:embed html.css
var htmlCSS string

// chartsTemplate defines "charts", the report's SVG charts, which forge
// view shows too (Charts).
//
//go:embed charts.tmpl
var chartsTemplate string

// HTML writes one self-contained page (inline CSS and SVG, no scripts, nothing
// fetched): the standings, the charts, and each candidate's trials in
// collapsed sections. Everything from the record is escaped by html/template.
func HTML(w io.Writer, rec *record.Record, opts Options) error {
	opts, err := prepare(rec, opts)
	if err != nil {
		return err
	}
	tmpl, err := htmlTemplates(htmlTemplate)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, newHTMLPage(rec, opts)); err != nil {
		return fmt.Errorf("render HTML report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

// htmlTemplates parses main with the charts' template and functions.
func htmlTemplates(main string) (*template.Template, error) {
	tmpl, err := template.New("report").Funcs(template.FuncMap{
		"f1":  f1,
		"add": func(a, b float64) float64 { return a + b },
		"sub": func(a, b float64) float64 { return a - b },
		"odd": func(i int) bool { return i%2 == 1 },
	}).Parse(main)
	if err == nil {
		_, err = tmpl.Parse(chartsTemplate)
	}
	if err != nil {
		return nil, fmt.Errorf("parse HTML report template: %w", err)
	}
	return tmpl, nil
}

// f1 formats an SVG coordinate.
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// htmlPage is what the template renders.
type htmlPage struct {
	CSS         template.CSS
	RunID       string
	Objective   string
	Facts       string
	Started     string
	Generated   string
	WinnerLine  string
	HasWinner   bool
	Interrupted bool
	Retried     string
	Undeleted   []string
	Rows        []htmlRow
	// Middle heads the standings' columns between status and notes.
	Middle     []string
	Comparison []htmlFact
	Heat       *htmlHeat
	Score      *scoreChart
	Cost       *costChart
	Runtime    *runtimeChart
	Candidates []htmlCandidate
	// Summarised: the page shows a selection of trials (Summary says which).
	Summarised bool
	Summary    string
}

// A run of more than htmlMaxTrials trials is summarised: the hardest tasks in
// the heat map and a few failed trials of each kind per candidate. Every
// trial stays in results.json.
const (
	htmlMaxTrials          = 500
	htmlMaxTasks           = 100
	htmlMaxFailures        = 50
	htmlMaxFailuresPerKind = 10
)

type htmlRow struct {
	Rank, Candidate, Anchor, Status, Health string
	Middle                                  []string
	Notes                                   string
	Winner                                  bool
}

// htmlHeat is a suite's heat map: a row per task, a cell per candidate.
type htmlHeat struct {
	Candidates []string
	Rows       []htmlHeatRow
	// More is how many tasks of the matrix the page leaves out.
	More int
}

type htmlHeatRow struct {
	Task, Mean string
	Cells      []htmlHeatCell
}

type htmlHeatCell struct {
	Text, Title, Href string
	// Class is heat0 (score 0) … heat10 (score 1), or heatnone.
	Class string
}

type htmlFact struct{ Name, Value string }

type htmlCandidate struct {
	ID, Anchor, Status, Health string
	Winner                     bool
	Notes                      []string
	Trials                     []htmlTrial
	// Hidden says which of the candidate's trials the page leaves out.
	Hidden string
}

func newHTMLPage(rec *record.Record, opts Options) htmlPage {
	cs := candidates(rec)
	p := htmlPage{
		CSS:         template.CSS(htmlCSS),
		RunID:       text.OneLine(rec.RunID),
		Objective:   strings.ToValidUTF8(rec.Objective, "\uFFFD"),
		Facts:       runFacts(rec, cs),
		Generated:   opts.Now().UTC().Format(time.RFC3339),
		WinnerLine:  winnerLine(rec, cs),
		HasWinner:   rec.Winner != nil,
		Interrupted: rec.Interrupted,
		Retried:     retriedLine(rec),
	}
	if !rec.StartedAt.IsZero() {
		p.Started = rec.StartedAt.UTC().Format(time.RFC3339)
	}
	for _, id := range rec.UndeletedSandboxes {
		p.Undeleted = append(p.Undeleted, text.OneLine(id))
	}
	p.Summarised = len(rec.Results) > htmlMaxTrials
	cols := columns(rec)
	for _, col := range cols[3 : len(cols)-1] { // between status and notes
		p.Middle = append(p.Middle, mdHeader(col.header))
	}
	links := map[[2]string]string{} // a candidate's first trial of a task shown
	rows := cells(cols, cs)
	for i, c := range cs {
		anchor := fmt.Sprintf("c%d-%s", i+1, anchorSafe(c.standing.CandidateID))
		p.Rows = append(p.Rows, htmlRow{
			Rank: c.rankText(), Candidate: text.OneLine(c.standing.CandidateID), Anchor: anchor, Status: c.statusText(),
			Health: string(c.health()), Middle: rows[i][3 : len(cols)-1], Notes: text.Shorten(c.notes(), 80), Winner: c.winner,
		})
		p.Candidates = append(p.Candidates, newHTMLCandidate(c, anchor, p.Summarised, links, opts))
	}
	if p.Summarised {
		p.Summary = fmt.Sprintf("%d trials: this page shows each candidate's failed trials, at most %d of each kind and %d in all%s; "+
			"every trial is in results.json, and its stdout, stderr and artifact in the run's directory.",
			len(rec.Results), htmlMaxFailuresPerKind, htmlMaxFailures, tasksShown(rec))
	}
	p.Heat = newHTMLHeat(rec, links, p.Summarised)
	p.Comparison = comparisonFacts(rec)
	if len(cs) > 0 {
		p.Score = newScoreChart(cs)
		p.Cost = newCostChart(cs)
		p.Runtime = newRuntimeChart(cs)
	}
	return p
}

// comparisonFacts are rec's comparison as name and value; nil without one.
func comparisonFacts(rec *record.Record) []htmlFact {
	c := rec.Comparison
	if c == nil {
		return nil
	}
	facts := []htmlFact{
		{"best", fmt.Sprintf("%s (%s)", text.OneLine(c.Best), text.Score(c.BestScore))},
		{"second", fmt.Sprintf("%s (%s)", text.OneLine(c.Second), text.Score(c.SecondScore))},
		{"method", text.OneLine(c.Method)},
	}
	diff := text.Num(c.Difference)
	if c.DifferenceCI95 != nil {
		diff += fmt.Sprintf(" (95%% CI %s to %s)", text.Num(c.DifferenceCI95[0]), text.Num(c.DifferenceCI95[1]))
	}
	facts = append(facts, htmlFact{"difference", diff})
	if c.Ratio != 0 {
		facts = append(facts, htmlFact{"ratio", text.Ratio(c.Ratio)})
	}
	if c.PValue != nil {
		facts = append(facts, htmlFact{"p-value", text.P(*c.PValue, cmp.Or(c.Alpha, scoring.Alpha))})
	}
	verdict := "not distinguishable"
	if c.Clear {
		verdict = "clearly better"
	}
	if c.Alpha > 0 {
		verdict += fmt.Sprintf(" at α = %s", strconv.FormatFloat(c.Alpha, 'g', 3, 64))
	}
	return append(facts, htmlFact{"verdict", verdict})
}

// anchorSafe keeps the characters a candidate id may have (A-Za-z0-9_.-).
func anchorSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '.' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return -1
	}, s)
}

// tasksShown is ", and the 100 hardest of the 25000 tasks", or "".
func tasksShown(rec *record.Record) string {
	switch {
	case len(rec.TaskMatrix) > htmlMaxTasks:
		return fmt.Sprintf(", and the %d hardest of the %d tasks", htmlMaxTasks, len(rec.TaskMatrix))
	case len(rec.TaskMatrix) > 0:
		return ", and every task"
	}
	return ""
}

// newHTMLCandidate is c's section; links gets the anchor of c's first trial
// shown of each task.
func newHTMLCandidate(c candidate, anchor string, summarised bool, links map[[2]string]string, opts Options) htmlCandidate {
	hc := htmlCandidate{
		ID: text.OneLine(c.standing.CandidateID), Anchor: anchor, Status: c.statusText(),
		Health: string(c.health()), Winner: c.winner,
	}
	if l := c.costLine(); l != "" {
		hc.Notes = append(hc.Notes, l)
	}
	for _, n := range c.standing.Notes {
		hc.Notes = append(hc.Notes, text.OneLine(n))
	}
	shown := c.results
	if summarised {
		shown = shownFailures(c.results, htmlMaxFailuresPerKind, htmlMaxFailures)
		failed := len(c.results) - c.succeeded
		var parts []string
		if failed > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d failed %s shown", len(shown), failed, text.Plural(failed, "trial", "trials")))
		}
		if c.succeeded > 0 {
			parts = append(parts, fmt.Sprintf("%d successful %s not shown", c.succeeded, text.Plural(c.succeeded, "trial", "trials")))
		}
		if len(shown) < len(c.results) {
			hc.Hidden = strings.Join(parts, "; ") + " (see results.json)"
		}
	}
	for _, r := range shown { // in trial order: the first of a task is its lowest
		t := newHTMLTrial(c, *r, opts)
		t.Anchor = fmt.Sprintf("%s-%s-%d", anchor, anchorSafe(r.TaskID), r.Trial)
		if key := [2]string{r.CandidateID, r.TaskID}; links[key] == "" {
			links[key] = "#" + t.Anchor
		}
		hc.Trials = append(hc.Trials, t)
	}
	return hc
}

// shownFailures picks at most perKind failed trials of each error kind and
// most in all, so every kind of failure is seen.
func shownFailures(rs []*record.Trial, perKind, most int) []*record.Trial {
	var out []*record.Trial
	n := map[runner.ErrorKind]int{}
	for _, r := range rs {
		if r.Success || n[r.ErrorKind] >= perKind {
			continue
		}
		n[r.ErrorKind]++
		out = append(out, r)
		if len(out) == most {
			break
		}
	}
	return out
}

// newHTMLHeat is a suite's heat map, or nil: every task, or the hardest when
// summarised. A cell links to the candidate's first trial of the task shown.
func newHTMLHeat(rec *record.Record, links map[[2]string]string, summarised bool) *htmlHeat {
	if len(rec.TaskMatrix) == 0 {
		return nil
	}
	h := &htmlHeat{}
	for _, c := range rec.TaskMatrix[0].Cells {
		h.Candidates = append(h.Candidates, text.OneLine(c.CandidateID))
	}
	rows := rec.TaskMatrix
	if summarised && len(rows) > htmlMaxTasks {
		rows, h.More = rows[:htmlMaxTasks], len(rows)-htmlMaxTasks
	}
	for _, row := range rows {
		hr := htmlHeatRow{Task: text.OneLine(row.TaskID), Mean: MeanText(row)}
		for _, c := range row.Cells {
			cell := htmlHeatCell{Href: links[[2]string{c.CandidateID, row.TaskID}]}
			cell.Text, cell.Class, cell.Title = MatrixCell(row.TaskID, c)
			hr.Cells = append(hr.Cells, cell)
		}
		h.Rows = append(h.Rows, hr)
	}
	return h
}
