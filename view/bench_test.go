package view

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A run of 100,000 trials (4 candidates × 25,000 tasks, as
// bench/scale.sh plays): its results.json is about 100 MB. Targets: the
// run page within 2 s of the first open (the index built), a trial page
// within 0.5 s.

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
// index read, then the page.
func BenchmarkRunPageFirstOpen100k(b *testing.B) {
	out := big(b)
	b.ResetTimer()
	for b.Loop() {
		s, _ := New(Options{Out: out})
		page(b, s, "/run/big")
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
