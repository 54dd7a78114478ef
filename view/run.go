package view

import (
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/runner"
)

// Page sizes: the run page never lists more than this many tasks of the
// matrix or trials at once.
const (
	matrixPage = 50
	trialsPage = 50
)

type runPage struct {
	ID, Objective, Started string
	Live                   bool
	// Stopped is the last sign of life of a live run forge no longer
	// plays (record.Stopped), empty otherwise.
	Stopped string
	// Finished is how many trials have finished: a live page's events
	// start after them.
	Finished  int
	Summary   report.Summary
	Standings []standingRow
	Gates     string
	Charts    template.HTML
	Matrix    *matrixView
	Trials    trialsView
}

type standingRow struct {
	report.SummaryRow
	Cells []cell
	// Trials links the candidate's trials.
	Trials string
}

type cell struct {
	Text    string
	Numeric bool
}

// matrixView is a page of a suite's task × candidate matrix, hardest
// first, filtered.
type matrixView struct {
	Candidates           []string
	Rows                 []matrixRow
	Task, Failed, Passed string
	// Difficulty and Category filter on the tasks' fields of those names;
	// Difficulties and Categories are the values the tasks have.
	Difficulty, Category     string
	Difficulties, Categories []string
	Pager                    pager
	// Of is how many tasks the filter kept, Total how many there are.
	Of, Total int
}

type matrixRow struct {
	Task, Mean string
	Cells      []matrixCell
}

type matrixCell struct {
	Text, Class, Title, Href string
}

// trialsView is a page of the run's trials, filtered by candidate and
// outcome.
type trialsView struct {
	Candidates        []string
	Candidate, Status string
	Rows              []trialRow
	Pager             pager
	Of                int
}

// trialRow is a trial in the trials list, and in a live run's events
// (liveTrial).
type trialRow struct {
	Href    string `json:"href"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	Health  string `json:"health"`
	Score   string `json:"score"`
	Runtime string `json:"runtime"`
	Error   string `json:"error"`
}

// pager is a list's page links.
type pager struct {
	Page, Pages int
	Prev, Next  string
}

// newPager is page (1-based, clamped) of n items, size a page, linking
// through base with the query key set.
func newPager(q url.Values, key string, n, size int) (pager, int, int) {
	pages := max(1, (n+size-1)/size)
	page, _ := strconv.Atoi(q.Get(key))
	page = min(max(page, 1), pages)
	p := pager{Page: page, Pages: pages}
	link := func(to int) string {
		v := maps.Clone(q)
		v.Set(key, strconv.Itoa(to))
		return "?" + v.Encode()
	}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if page < pages {
		p.Next = link(page + 1)
	}
	lo := (page - 1) * size
	return p, lo, min(n, lo+size)
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	x := s.index(w, r, id)
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	d := s.derive(x)
	rec := x.rec
	p := runPage{ID: id, Objective: strings.ToValidUTF8(rec.Objective, "\uFFFD"), Live: x.live(),
		Summary: d.summary, Gates: d.gates, Charts: d.charts, Finished: x.count(), Stopped: x.stopped()}
	if !rec.StartedAt.IsZero() {
		p.Started = rec.StartedAt.UTC().Format(time.RFC3339)
	}
	for _, row := range d.summary.Rows {
		sr := standingRow{SummaryRow: row, Trials: candidateTrials(row.Candidate)}
		for i, c := range row.Cells {
			sr.Cells = append(sr.Cells, cell{c, d.summary.Numeric[i]})
		}
		p.Standings = append(p.Standings, sr)
	}
	q := r.URL.Query()
	p.Matrix = s.matrix(x, q)
	p.Trials = s.trials(x, q)
	s.render(w, r, "run.tmpl", p)
}

// matrix is the page of the suite's matrix q asks for, nil without one.
// Filters: task (a substring of the task's id), failed and passed (the
// tasks candidate failed is not solved and candidate passed solved).
func (s *Server) matrix(x *runIndex, q url.Values) *matrixView {
	rows := x.rec.TaskMatrix
	if len(rows) == 0 {
		return nil
	}
	m := &matrixView{Task: q.Get("task"), Failed: q.Get("failed"), Passed: q.Get("passed"), Total: len(rows)}
	col := map[string]int{}
	for i, c := range rows[0].Cells {
		m.Candidates = append(m.Candidates, c.CandidateID)
		col[c.CandidateID] = i
	}
	task := strings.ToLower(m.Task)
	fi, fok := col[m.Failed]
	pi, pok := col[m.Passed]
	m.Difficulty, m.Category = q.Get("difficulty"), q.Get("category")
	info := map[string]record.TaskInfo{}
	for _, t := range x.rec.Tasks {
		info[t.ID] = t
		if t.Difficulty != "" && !slices.Contains(m.Difficulties, t.Difficulty) {
			m.Difficulties = append(m.Difficulties, t.Difficulty)
		}
		if t.Category != "" && !slices.Contains(m.Categories, t.Category) {
			m.Categories = append(m.Categories, t.Category)
		}
	}
	slices.Sort(m.Difficulties)
	slices.Sort(m.Categories)
	var kept []int
	for i, row := range rows {
		switch {
		case task != "" && !strings.Contains(strings.ToLower(row.TaskID), task):
		case m.Difficulty != "" && info[row.TaskID].Difficulty != m.Difficulty:
		case m.Category != "" && info[row.TaskID].Category != m.Category:
		case fok && (fi >= len(row.Cells) || row.Cells[fi].Solved):
		case pok && (pi >= len(row.Cells) || !row.Cells[pi].Solved):
		default:
			kept = append(kept, i)
		}
	}
	m.Of = len(kept)
	var lo, hi int
	m.Pager, lo, hi = newPager(q, "mpage", len(kept), matrixPage)
	for _, i := range kept[lo:hi] {
		row := rows[i]
		mr := matrixRow{Task: text.OneLine(row.TaskID), Mean: report.MeanText(row)}
		for _, c := range row.Cells {
			mc := matrixCell{Href: x.firstURL(c.CandidateID, row.TaskID)}
			mc.Text, mc.Class, mc.Title = report.MatrixCell(row.TaskID, c)
			mr.Cells = append(mr.Cells, mc)
		}
		m.Rows = append(m.Rows, mr)
	}
	return m
}

// trials is the page of the run's trials q asks for: cand (a candidate)
// and status (failed) filter them.
func (s *Server) trials(x *runIndex, q url.Values) trialsView {
	t := trialsView{Candidate: q.Get("cand"), Status: q.Get("status")}
	seen := map[uint32]bool{}
	var kept []int
	for i := range x.idx.Trials {
		r := &x.idx.Trials[i]
		if !seen[r.Candidate] {
			seen[r.Candidate] = true
			t.Candidates = append(t.Candidates, x.candidate(i))
		}
		if (t.Candidate != "" && x.candidate(i) != t.Candidate) || (t.Status == "failed" && r.Success()) {
			continue
		}
		kept = append(kept, i)
	}
	t.Of = len(kept)
	var lo, hi int
	t.Pager, lo, hi = newPager(q, "tpage", len(kept), trialsPage)
	for _, i := range kept[lo:hi] {
		t.Rows = append(t.Rows, x.row(i))
	}
	return t
}

// row is trial i as the trials list shows it.
func (x *runIndex) row(i int) trialRow {
	r := x.trial(i)
	row := trialRow{Href: trialURL(x.id, i), Name: runner.TrialName(r.CandidateID, r.TaskID, r.Trial, true),
		Score: "—", Runtime: text.Seconds(r.RuntimeSeconds)}
	row.Status, row.Health = report.TrialStatus(&r)
	switch {
	case !r.Success:
		row.Error = text.Shorten(text.OneLine(r.ErrorMessage), 100)
	case r.Wrong():
		row.Error = text.Shorten(report.WrongText(&r), 100)
	}
	if r.Score != nil {
		row.Score = text.Score(*r.Score)
	}
	return row
}
