package cli_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// writeTournament writes a manifest with n identical candidates running
// script (a .sh file's text) and returns its directory.
func writeTournament(t *testing.T, n int, script, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cand.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "objective: \"the same work\"\ndefaults:\n  timeout: 60s\n  concurrency: %d\ncandidates:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: c%d\n    script: cand.sh\n", i)
	}
	b.WriteString(extra)
	if err := os.WriteFile(filepath.Join(dir, "forge.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func spread(xs []float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return hi - lo
}

// Five copies of one candidate, created one after another by a slow pacer
// into slowly starting sandboxes: each job waits longer than the one
// before, but the candidates' runtimes are their own, so they all tie.
//
// Not parallel: the tie rests on runtimes within 5% of each other
// (scoring.RuntimeNoise), and the load of other tests' forges and
// emulators stretches them unevenly (spreads of 0.15 s on two cores).
func TestDaytonaIdenticalCandidatesTieWhateverTheQueue(t *testing.T) {
	srv := daytonatest.Start(t, daytonatest.Options{StartDelay: 700 * time.Millisecond})
	// Four seconds each: the noise allowance (5%, 0.2 s) then covers the
	// scheduling delays of a loaded machine (0.13 s seen at load 20 on two
	// cores, over two seconds' 0.1 s).
	dir := writeTournament(t, 5, "sleep 4\necho done > \"$2\"\n", "daytona:\n  create_rate: 1\n")
	cmd, _, stderr := forgeCmd(dir, []string{"DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()},
		"run", "--daytona", "--no-fallback", "--run-id", "tie", "--quiet")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "tie", "results.json"))
	var runtimes, jobs []float64
	for _, r := range rec.Results {
		if !r.Success {
			t.Fatalf("%s failed: %s %s", r.CandidateID, r.ErrorKind, r.ErrorMessage)
		}
		if r.RuntimeSeconds < 4 || r.RuntimeSeconds > r.JobSeconds-r.Phases.Create {
			t.Errorf("%s: runtime_seconds %.3f, want the candidate's own four seconds (job %.3f, create %.3f)",
				r.CandidateID, r.RuntimeSeconds, r.JobSeconds, r.Phases.Create)
		}
		if r.JobSeconds < r.RuntimeSeconds+r.Phases.Create {
			t.Errorf("%s: job_seconds %.3f < runtime %.3f + create %.3f", r.CandidateID, r.JobSeconds, r.RuntimeSeconds, r.Phases.Create)
		}
		runtimes = append(runtimes, r.RuntimeSeconds)
		jobs = append(jobs, r.JobSeconds)
	}
	// The pacer lets one creation through a second: the jobs' wall times
	// spread over about 4 s, the candidates' runtimes do not (no absolute
	// bound on theirs: a loaded machine stretches a sleep, but not by the
	// queue). At 2 a second the queue's 2 s once spread only 0.72 s, on a
	// machine at load 20 (six test suites at once).
	if s := spread(jobs); s < 1.5 {
		t.Errorf("job_seconds spread %.3f s, want the queue's ~4 s: %v", s, jobs)
	}
	if s := spread(runtimes); s > spread(jobs)/3 {
		t.Errorf("runtime_seconds spread %.3f s, near the queue's %.3f s: %v", s, spread(jobs), runtimes)
	}
	t.Logf("runtime_seconds %v (spread %.3f s); job_seconds %v (spread %.3f s); %s",
		runtimes, spread(runtimes), jobs, spread(jobs), rec.WinnerLine)
	if rec.Winner != nil {
		t.Errorf("winner %s (%s), want none among identical candidates", *rec.Winner, rec.WinnerLine)
	}
	for _, s := range rec.Standings {
		if s.Rank != 1 || !s.Tied {
			t.Errorf("%s: rank %d tied %v score %v, want all tied at 1", s.CandidateID, s.Rank, s.Tied, s.Score)
		}
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A candidate that could not run (its sandbox was never created) leaves
// the run without a verdict: no winner, exit 3, and stderr gives the exact
// command that finishes the run, which then does.
func TestIncompleteRunExitsThreeWithTheResumeCommand(t *testing.T) {
	t.Parallel()
	srv := daytonatest.Start(t, daytonatest.Options{})
	dir := writeTournament(t, 2, "echo ok > \"$2\"\n", "")
	// c1 goes first (one job at a time) and every attempt at its sandbox
	// gets a 503; it is not played again in another (--retries 0).
	srv.Inject(daytonatest.OpCreateSandbox, daytonatest.Fault{Status: 503, Times: 5})
	env := []string{"DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()}
	cmd, _, stderr := forgeCmd(dir, env, "run", "--daytona", "--run-id", "r1", "--concurrency", "1", "--out", "my runs", "--retries", "0")
	if code := exitCodeOf(t, cmd.Run()); code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "my runs", "r1", "results.json"))
	if rec.Winner != nil || len(rec.Incomplete) != 1 || rec.Incomplete[0].CandidateID != "c1" ||
		!strings.HasPrefix(rec.WinnerLine, "incomplete: c1 did not run (infra: ") {
		t.Fatalf("winner %v, incomplete %+v, line %q", rec.Winner, rec.Incomplete, rec.WinnerLine)
	}
	const hint = "forge: no verdict: c1 did not run; finish the run with:\n  "
	_, after, ok := strings.Cut(stderr.String(), hint)
	if !ok {
		t.Fatalf("no resume command in stderr:\n%s", stderr)
	}
	line, _, _ := strings.Cut(after, "\n")
	if want := "forge run --resume r1 --out 'my runs' --daytona --concurrency 1 --retries 0"; line != want {
		t.Fatalf("resume command %q, want %q", line, want)
	}
	// The command as printed, through a shell, finishes the run.
	cmd, _, stderr = forgeCmd(dir, env)
	cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", line}
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	rec = readResults(t, filepath.Join(dir, "my runs", "r1", "results.json"))
	if rec.Incomplete != nil || len(rec.Results) != 2 || !rec.Results[0].Success || !rec.Results[1].Success ||
		strings.HasPrefix(rec.WinnerLine, "incomplete") {
		t.Fatalf("after resume: incomplete %+v, line %q, results %+v", rec.Incomplete, rec.WinnerLine, rec.Results)
	}
	checkEmulator(t, srv, srv.APIKey())
}
