package view

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/forge-run/forge/record"
)

// A run of 100,000 trials (4 candidates × 25,000 tasks, as
// bench/scale.sh plays): its results.json is about 20 MB, its trials.jsonl
// 120 MB. Targets: the run page within 1 s of a fresh viewer's first open
// (its index written by forge run), a trial page within 0.5 s.

func big(b *testing.B) string {
	b.Helper()
	out := b.TempDir()
	makeRun(b, out, spec{id: "big", candidates: []string{"a", "b", "c", "d"}, tasks: 25000, trials: 1, start: t0})
	if fi, err := os.Stat(filepath.Join(out, "big", "results.json")); err == nil {
		b.Logf("results.json: %.0f MB", float64(fi.Size())/1e6)
	}
	return out
}

func page(b *testing.B, s *Server, path string) {
	b.Helper()
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1"
	s.Handler().ServeHTTP(w, req)
	if w.Code != 200 {
		b.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
	}
}

// BenchmarkRunPageFirstOpen100k is the run page of a fresh server: the
// index read, then the page. With the run's index (as forge run leaves
// it) or without it (made from trials.jsonl and written, as the first
// open of a run an older forge wrote).
func BenchmarkRunPageFirstOpen100k(b *testing.B) {
	out := big(b)
	path := filepath.Join(out, "big", record.ResultsFile)
	must(b, record.WriteIndex(path))
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			s, _ := New(Options{Out: out})
			page(b, s, "/run/big")
		}
	})
	b.Run("no-index", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			must(b, os.Remove(filepath.Join(out, "big", record.IndexFile)))
			b.StartTimer()
			s, _ := New(Options{Out: out})
			page(b, s, "/run/big")
		}
	})
}

// BenchmarkWriteIndex100k is what the index adds to the end of forge run
// (and forge merge): trials.jsonl read once, the index written.
func BenchmarkWriteIndex100k(b *testing.B) {
	out := big(b)
	path := filepath.Join(out, "big", record.ResultsFile)
	for b.Loop() {
		must(b, record.WriteIndex(path))
	}
	if fi, err := os.Stat(filepath.Join(out, "big", record.IndexFile)); err == nil {
		b.ReportMetric(float64(fi.Size()), "index-bytes")
	}
}

// BenchmarkRunPage100k is the run page once the index is cached, on a
// later page of the matrix with a filter.
func BenchmarkRunPage100k(b *testing.B) {
	out := big(b)
	s, _ := New(Options{Out: out})
	page(b, s, "/run/big")
	b.ResetTimer()
	for b.Loop() {
		page(b, s, "/run/big?task=task-01&failed=d&mpage=2&tpage=900")
	}
}

// BenchmarkTrialPage100k is one trial's page: its line read and decoded.
func BenchmarkTrialPage100k(b *testing.B) {
	out := big(b)
	s, _ := New(Options{Out: out})
	page(b, s, "/run/big")
	b.ResetTimer()
	n := 0
	for b.Loop() {
		n = (n + 7919) % 100000
		page(b, s, "/run/big/trial/"+strconv.Itoa(n+1))
	}
}
