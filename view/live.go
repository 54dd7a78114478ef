package view

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// liveTick is how often the events of a live run look at its trials.
const liveTick = 250 * time.Millisecond

// liveTrial is a finished trial as an event tells the page: its row.
type liveTrial struct {
	N int `json:"n"` // how many trials have finished, this one included
	trialRow
}

// events streams a run's finished trials after ?from=N (or Last-Event-ID)
// as server-sent "trial" events, then "finished" once results.json is
// whole, or "stopped" when forge no longer plays the run.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	path, ok := s.runPath(id)
	if !ok {
		s.notFound(w, r, "no run "+id)
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	if n, err := strconv.Atoi(r.Header.Get("Last-Event-ID")); err == nil {
		from = n
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(liveTick)
	defer tick.Stop()
	sentRunning := ""
	for {
		x, err := s.cache.get(id, path)
		if err != nil {
			fmt.Fprintf(w, "event: failed\ndata: %s\n\n", jsonString(err.Error()))
			flusher.Flush()
			return
		}
		x.mu.Lock()
		var out []liveTrial
		for i := from; i < x.count(); i++ {
			row := x.row(i)
			row.Error = s.mask.String(row.Error)
			out = append(out, liveTrial{N: i + 1, trialRow: row})
		}
		from = max(from, x.count())
		done := !x.live()
		dir := x.dir
		x.mu.Unlock()
		for _, t := range out {
			b, _ := json.Marshal(t)
			fmt.Fprintf(w, "id: %d\nevent: trial\ndata: %s\n\n", t.N, b)
		}
		if done {
			fmt.Fprintf(w, "event: finished\ndata: %s\n\n", jsonString(text.OneLine(x.rec.WinnerLine)))
			flusher.Flush()
			return
		}
		// A run forge stopped playing (killed) says so, and the stream
		// ends: nothing more will come until it is resumed.
		if last := x.stopped(); last != "" {
			fmt.Fprintf(w, "event: stopped\ndata: %s\n\n", jsonString(last))
			flusher.Flush()
			return
		}
		// The jobs under way and their phases, when they changed.
		if b := runningJobs(dir); b != sentRunning {
			fmt.Fprintf(w, "event: running\ndata: %s\n\n", b)
			sentRunning = b
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// liveJob is a job under way as an event tells the page.
type liveJob struct {
	Job     string `json:"job"`
	Phase   string `json:"phase"`
	Elapsed string `json:"elapsed"`
}

// runningJobs is the JSON list of the jobs under way in the run in dir
// (its record.RunningFile; an empty list when there is none).
func runningJobs(dir string) string {
	jobs := []liveJob{}
	if r := record.ReadRunning(dir); r != nil {
		for _, j := range r.Jobs {
			jobs = append(jobs, liveJob{Job: j.Job, Phase: string(j.Phase),
				Elapsed: r.UpdatedAt.Sub(j.StartedAt).Round(100 * time.Millisecond).String()})
		}
	}
	b, _ := json.Marshal(jobs)
	return string(b)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
