package daytona

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
	"golang.org/x/sync/errgroup"
)

// specs are parsed once for every test in the package.
var specs *daytonatest.Specs

func TestMain(m *testing.M) {
	var err error
	if specs, err = daytonatest.LoadSpecs(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one test's emulator and runner.
type env struct {
	t      testing.TB
	srv    *daytonatest.Server
	opts   Options
	r      *Runner
	warn   *syncBuffer
	dir    string // candidates live here
	out    string // the run's output directory
	closed bool
}

const testRunID = "run1"

// newEnv starts an emulator and a Runner against it. At the end of the
// test it closes the Runner and fails if any sandbox is left alive.
func newEnv(t testing.TB, so daytonatest.Options, mut func(*Options)) *env {
	t.Helper()
	so.Specs = specs
	srv := daytonatest.Start(t, so)
	e := &env{t: t, srv: srv, warn: &syncBuffer{}, dir: t.TempDir(), out: t.TempDir()}
	e.opts = Options{
		APIKey: srv.APIKey(), APIURL: srv.URL(), RunID: testRunID,
		LedgerPath: filepath.Join(e.out, testRunID, LedgerFile), Warn: e.warn,
		CreateRate: 1000,
		Retry:      Retry{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
	}
	if mut != nil {
		mut(&e.opts)
	}
	r, err := New(context.Background(), e.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.r = r
	t.Cleanup(func() {
		if !e.closed {
			e.close()
		}
		if n := srv.LiveCount(); n != 0 {
			t.Errorf("%d sandboxes left alive: %+v", n, srv.Live())
		}
		if strings.Contains(e.warn.String(), srv.APIKey()) {
			t.Errorf("the API key was printed: %s", e.warn.String())
		}
	})
	return e
}

func (e *env) close() {
	e.t.Helper()
	e.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.r.Close(ctx); err != nil {
		e.t.Errorf("Close: %v", err)
	}
}

// file writes a candidate file and returns its path.
func (e *env) file(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// pyJob is a job running a Python candidate.
func (e *env) pyJob(id, source string) runner.Job {
	return e.job(id, "python3", id+".py", "Generate weekly AI events", source)
}

// shJob is a job running a shell candidate (cheaper than Python).
func (e *env) shJob(id, source string) runner.Job { return e.job(id, "sh", id+".sh", "obj", source) }

// shJobs are n shell candidates named by nameFormat (given 0 to n-1).
func (e *env) shJobs(n int, nameFormat, source string) []runner.Job {
	var jobs []runner.Job
	for i := range n {
		jobs = append(jobs, e.shJob(fmt.Sprintf(nameFormat, i), source))
	}
	return jobs
}

// job runs "interp file", file holding source.
func (e *env) job(id, interp, file, objective, source string) runner.Job {
	return runner.Job{
		RunID: testRunID, CandidateID: id, Trial: 1, Objective: objective,
		Command: []string{interp, file}, Files: []runner.File{{Src: e.file(file, source), Dst: file}},
		OutputFile: "output.md", Timeout: 30 * time.Second,
	}
}

func (e *env) run(job runner.Job) runner.Result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := e.r.Run(ctx, job)
	if err != nil {
		e.t.Fatalf("Run %s: %v", job.Name(), err)
	}
	return res
}

// runAll runs jobs concurrently, at most limit at once, as the run does.
func (e *env) runAll(ctx context.Context, limit int, jobs []runner.Job) ([]runner.Result, []error) {
	res := make([]runner.Result, len(jobs))
	errs := make([]error, len(jobs))
	var g errgroup.Group
	g.SetLimit(limit)
	for i, j := range jobs {
		g.Go(func() error {
			res[i], errs[i] = e.r.Run(ctx, j)
			return nil
		})
	}
	g.Wait()
	return res, errs
}

func ledgerEvents(t *testing.T, path string) []LedgerEntry {
	t.Helper()
	es, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// pendingSandboxes are the sandboxes a ledger says were created (or about
// to be) and never deleted, in order.
func pendingSandboxes(entries []LedgerEntry) []string {
	alive := map[string]bool{}
	var order, pending []string
	for _, e := range entries {
		switch e.Event {
		case eventCreate, eventCreated:
			if _, seen := alive[e.Name]; !seen {
				order = append(order, e.Name)
			}
			alive[e.Name] = true
		case eventDeleted, eventNotCreated:
			alive[e.Name] = false
		}
	}
	for _, n := range order {
		if alive[n] {
			pending = append(pending, n)
		}
	}
	return pending
}

// limit is the pacer's creation rate now, per second.
func (p *pacer) limit() float64 { return float64(p.lim.Limit()) }
