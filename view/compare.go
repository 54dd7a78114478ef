package view

import (
	"bytes"
	"net/http"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

type comparePage struct {
	A, B       string
	Table      string
	Candidates []compareCandidate
}

type compareCandidate struct {
	ID, Status   string
	AHref, BHref string
	Tasks        []compareTask
}

type compareTask struct {
	Task, Base, Head, AHref, BHref string
	Significant                    bool
}

// comparePage shows what forge compare says of run a (the base) and run
// b (the head), with links to the trials of each task that changed.
func (s *Server) comparePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a, b := q.Get("a"), q.Get("b")
	xa := s.index(w, r, a)
	if xa == nil {
		return
	}
	xb := s.index(w, r, b)
	if xb == nil {
		return
	}
	base, head := snapshot(xa), snapshot(xb)
	rep := compare.Runs(base, head)
	var t bytes.Buffer
	if err := compare.WriteTable(&t, rep, false); err != nil {
		s.fail(w, r, err)
		return
	}
	p := comparePage{A: a, B: b, Table: s.mask.String(t.String())}
	for _, c := range rep.Candidates {
		cc := compareCandidate{ID: c.CandidateID, Status: string(c.Status)}
		if c.Base != nil {
			cc.AHref = runURL(a) + candidateTrials(c.CandidateID)
		}
		if c.Head != nil {
			cc.BHref = runURL(b) + candidateTrials(c.CandidateID)
		}
		for _, tc := range c.Tasks {
			cc.Tasks = append(cc.Tasks, compareTask{Task: tc.TaskID, Base: text.Score(tc.Base), Head: text.Score(tc.Head),
				Significant: tc.Significant, AHref: firstTrial(xa, c.CandidateID, tc.TaskID), BHref: firstTrial(xb, c.CandidateID, tc.TaskID)})
		}
		p.Candidates = append(p.Candidates, cc)
	}
	s.render(w, r, "compare.tmpl", p)
}

// snapshot is a copy of x's record, safe to read while a live run's index
// grows.
func snapshot(x *runIndex) *record.Record {
	x.mu.Lock()
	defer x.mu.Unlock()
	rec := *x.rec
	rec.Results = x.results()
	return &rec
}

// firstTrial links the first trial of candidate on task in x, "" when
// there is none.
func firstTrial(x *runIndex, candidate, task string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.firstURL(candidate, task)
}
