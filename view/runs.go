package view

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
)

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"runURL":   runURL,
	"trialURL": trialURL,
	"add":      func(a, b int) int { return a + b },
}

func runURL(id string) string { return "/run/" + url.PathEscape(id) }

func trialURL(id string, i int) string { return runURL(id) + "/trial/" + strconv.Itoa(i+1) }

// candidateTrials is the query of a run's page that lists candidate's
// trials.
func candidateTrials(candidate string) string {
	return "?" + url.Values{"cand": {candidate}}.Encode() + "#trials"
}

// derived is what the pages show of a run that does not change until the
// index does: the reports' summary, the charts, the gates' verdict.
type derived struct {
	summary report.Summary
	charts  template.HTML
	gates   string
	// cost is what the trials cost, "" when none has a cost.
	cost string
}

// derive computes x's derived pages; the caller holds x.mu.
func (s *Server) derive(x *runIndex) *derived {
	if x.derived != nil {
		return x.derived
	}
	// The record with its trials, for as long as this takes.
	rec := *x.rec
	rec.Results = x.results()
	d := &derived{summary: report.Summarise(&rec)}
	charts, err := report.Charts(&rec)
	if err != nil {
		s.opts.Log.Printf("forge view: %s: %v", x.id, err)
	}
	d.charts = charts
	if s.opts.Gates != nil && rec.Finished() {
		d.gates = s.opts.Gates(&rec)
	}
	for i := range rec.Results {
		if rec.Results[i].Cost != nil {
			d.cost = text.USD(rec.TotalCostUSD())
			break
		}
	}
	x.derived = d
	return d
}

type runsPage struct {
	Out  string
	Runs []runRow
}

type runRow struct {
	ID, Started, Backend, Manifest, WinnerLine, Gates, Cost, Skipped string
	// GatesHead is the Gates column's word of the gates' verdict ("failed"
	// of "failed: why; why"); GatesWhy says there is more, which the run's
	// details line shows, Gates whole.
	GatesHead string
	GatesWhy  bool
	// Stopped is the last sign of life of a live run forge no longer
	// plays, empty otherwise.
	Stopped                   string
	Winner, Live, Interrupted bool
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	p := runsPage{Out: s.opts.Out}
	var entries []compare.Entry
	if s.opts.Out != "" {
		var err error
		if entries, err = compare.History(s.opts.Out, 0); err != nil {
			s.opts.Log.Printf("forge view: %v", err)
		}
	}
	for id, dir := range s.opts.Runs {
		if filepath.Dir(dir) != filepath.Clean(s.opts.Out) {
			entries = append(entries, compare.Entry{RunID: id, Dir: dir})
		}
	}
	for _, e := range entries {
		id := filepath.Base(e.Dir)
		row := runRow{ID: id, Skipped: e.Skipped}
		if e.Skipped == "" {
			s.fillRunRow(&row, id)
		}
		row.GatesHead, _, row.GatesWhy = strings.Cut(row.Gates, ": ")
		p.Runs = append(p.Runs, row)
	}
	s.render(w, r, "runs.tmpl", p)
}

// indexForList is the size of a record (results.json and its trials) up
// to which the runs list reads a run's index; a larger one is listed from
// its summary until it is opened.
var indexForList int64 = 8 << 20

// recordSize is the size of the record whose results.json is path, its
// trials file included.
func recordSize(path string) int64 {
	var n int64
	for _, p := range []string{path, filepath.Join(filepath.Dir(path), record.TrialsFile)} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// fillRunRow fills a runs list's row from the run's index, or from its
// record's head when it is large and not read yet.
func (s *Server) fillRunRow(row *runRow, id string) {
	path, ok := s.runPath(id)
	if !ok {
		row.Skipped = "not a run directory"
		return
	}
	if recordSize(path) > indexForList && s.cache.peek(path) == nil {
		rec, tasks, err := record.ReadSummary(path)
		if err != nil {
			row.Skipped = err.Error()
			return
		}
		if rec.Finished() {
			s.fillFromHead(row, rec, tasks)
			return
		}
	}
	x, err := s.cache.get(id, path)
	if err != nil {
		row.Skipped = err.Error()
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	rec := x.rec
	d := s.derive(x)
	rowFacts(row, rec, len(rec.Tasks))
	row.WinnerLine, row.Winner = d.summary.WinnerLine, d.summary.Winner
	row.Live, row.Stopped = x.live(), x.stopped()
	row.Gates, row.Cost = d.gates, d.cost
}

// fillFromHead fills a row from a finished run's record without its
// results: the standings say the cost; the gates' verdict, which may
// count trials, waits for the run to be opened.
func (s *Server) fillFromHead(row *runRow, rec *record.Record, tasks int) {
	rowFacts(row, rec, tasks)
	row.WinnerLine, row.Winner = text.OneLine(rec.WinnerLine), rec.Winner != nil
	if s.opts.Gates != nil {
		row.Gates = "open the run"
	}
	usd, costed := 0.0, false
	for _, st := range rec.Standings {
		if st.Cost != nil {
			usd, costed = usd+st.Cost.USD, true
		}
	}
	if costed {
		row.Cost = text.USD(usd)
	}
}

// rowFacts fills what a row says of the run whatever is read of it (its
// record's summary: tasks is how many tasks it has). Its backend has a
// suite's task count and the trials: "local · 12 tasks × 3".
func rowFacts(row *runRow, rec *record.Record, tasks int) {
	if !rec.StartedAt.IsZero() {
		row.Started = rec.StartedAt.UTC().Format(time.DateTime)
	}
	row.Backend = text.OneLine(rec.Backend)
	if tasks > 0 {
		row.Backend += fmt.Sprintf(" · %d tasks", tasks)
	}
	if rec.Trials > 1 {
		row.Backend += fmt.Sprintf(" × %d", rec.Trials)
	}
	row.Manifest = text.OneLine(rec.ManifestPath)
	row.Interrupted = rec.Interrupted
}
