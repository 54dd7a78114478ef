package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/squares"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

type trialKey struct {
	cand, task string
	trial      int
}

// TestDaytonaBadNight plays the 2 × 20 × 3 suite on a clean emulator and
// again on one that fails as a cloud does on a bad night
// (daytonatest.BadNight, seeded, so it replays exactly): every trial is judged exactly once, in one sandbox,
// its candidate run once; none ends infra; the verdict and every trial's
// success and score are the clean run's; nothing is left alive.
func TestDaytonaBadNight(t *testing.T) {
	t.Parallel()
	type played struct {
		rec  record.Record
		runs map[trialKey]int
	}
	play := func(chaos bool) played {
		// The candidates log their runs on this machine.
		shared := t.TempDir()
		srv := daytonatest.Start(t, daytonatest.Options{Shared: []string{shared}})
		if chaos {
			srv.SetChaos(18, daytonatest.BadNight()...)
		}
		runs := filepath.Join(shared, "runs")
		dir := t.TempDir()
		suite := squares.Suite{Tasks: 20, Trials: 3, Concurrency: 8, Runs: runs, Extra: "daytona:\n  create_rate: 100\n"}
		if err := suite.Write(dir); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		cmd, _, stderr := forgeCmd(dir, daytonaEnv(srv), "run", "--daytona", "--no-fallback", "--run-id", "night", "--quiet")
		if code := exitCodeOf(t, cmd.Run()); code != 0 {
			t.Fatalf("chaos %v: exit %d\n%s", chaos, code, stderr)
		}
		rec := readResults(t, filepath.Join(dir, "artifacts", "night", "results.json"))
		b, err := os.ReadFile(runs)
		if err != nil {
			t.Fatal(err)
		}
		count := map[trialKey]int{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var k trialKey
			if _, err := fmt.Sscanf(line, "%s %s %d", &k.cand, &k.task, &k.trial); err != nil {
				t.Fatalf("runs line %q: %v", line, err)
			}
			count[k]++
		}
		if chaos {
			fired := srv.ChaosFired()
			total := 0
			for _, n := range fired {
				total += n
			}
			t.Logf("bad night: %d faults %v; %s in %s", total, fired, rec.WinnerLine, time.Since(began).Round(time.Millisecond))
			// The night must have been bad where it matters, or the test
			// proves nothing.
			if total < 60 || fired[daytonatest.OpSessionExec] < 3 || fired[daytonatest.OpCreateSandbox] < 5 {
				t.Errorf("too calm a night: %v", fired)
			}
			if !strings.Contains(stderr.String(), "retrying") {
				t.Errorf("no retry was reported:\n%s", stderr)
			}
		}
		if len(rec.UndeletedSandboxes) > 0 {
			t.Errorf("chaos %v: undeleted sandboxes %v", chaos, rec.UndeletedSandboxes)
		}
		checkEmulator(t, srv, srv.APIKey())
		return played{rec, count}
	}
	clean, night := play(false), play(true)

	if len(night.rec.Results) != 120 || len(clean.rec.Results) != 120 {
		t.Fatalf("%d and %d results, want 120", len(clean.rec.Results), len(night.rec.Results))
	}
	want := map[trialKey]record.Trial{}
	for _, r := range clean.rec.Results {
		want[trialKey{r.CandidateID, r.TaskID, r.Trial}] = r
	}
	for _, r := range night.rec.Results {
		k := trialKey{r.CandidateID, r.TaskID, r.Trial}
		c := want[k]
		switch {
		case r.ErrorKind == runner.ErrInfra || r.ErrorKind == runner.ErrCancelled:
			t.Errorf("%v: %s: %s", k, r.ErrorKind, r.ErrorMessage)
		case r.Attempts != 1:
			t.Errorf("%v: %d attempts (%+v), want one sandbox", k, r.Attempts, r.AttemptErrors)
		case r.Success != c.Success || (r.Score == nil) != (c.Score == nil) || r.Score != nil && *r.Score != *c.Score:
			t.Errorf("%v: success %v score %v, clean run %v %v", k, r.Success, r.Score, c.Success, c.Score)
		}
		if n := night.runs[k]; n != 1 {
			t.Errorf("%v: the candidate ran %d times, want once", k, n)
		}
	}
	if len(night.runs) != 120 {
		t.Errorf("%d trials ran, want 120", len(night.runs))
	}
	if w, cw := night.rec.Winner, clean.rec.Winner; w == nil || cw == nil || *w != *cw || *w != "exact" {
		t.Errorf("winner %v, clean run %v, want exact", w, cw)
	}
	var scores, cleanScores []string
	for i, s := range night.rec.Standings {
		scores = append(scores, fmt.Sprintf("%s %v", s.CandidateID, s.Score))
		cleanScores = append(cleanScores, fmt.Sprintf("%s %v", clean.rec.Standings[i].CandidateID, clean.rec.Standings[i].Score))
	}
	if !slices.Equal(scores, cleanScores) {
		t.Errorf("standings %v, clean run %v", scores, cleanScores)
	}
}

// TestDaytonaFaultThatNeverClears: every start answers 502. Each trial
// spends its attempts (each in a fresh sandbox), and once as many in a row
// as run at once have, the run stops with exit 3 and one line naming the
// cause, leaving nothing alive and no loop.
func TestDaytonaFaultThatNeverClears(t *testing.T) {
	t.Parallel()
	srv := daytonatest.Start(t, daytonatest.Options{})
	srv.SetChaos(1, daytonatest.ChaosRule{Ops: []string{daytonatest.OpSessionExec}, Rate: 1, Fault: daytonatest.Fault{Status: 502}})
	dir := writeTournament(t, 10, "echo ok > \"$2\"\n", "")
	began := time.Now()
	cmd, _, stderr := forgeCmd(dir, daytonaEnv(srv), "run", "--daytona", "--no-fallback", "--run-id", "down", "--quiet")
	if code := exitCodeOf(t, cmd.Run()); code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, stderr)
	}
	t.Logf("stopped after %s:\n%s", time.Since(began).Round(time.Millisecond), stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	cause := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "forge: infra: ") {
			cause = l
		}
	}
	if !strings.Contains(cause, "10 trials in a row failed all their attempts (the last: ") || !strings.Contains(cause, ", 3 attempts): start the command: ") ||
		!strings.Contains(cause, "(HTTP 502)") {
		t.Errorf("no one-line cause in stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "forge run --resume down --daytona") {
		t.Errorf("no resume command:\n%s", stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "down", "results.json"))
	attempts := 0
	for _, r := range rec.Results {
		if r.Success {
			t.Errorf("%s succeeded", r.CandidateID)
		}
		attempts += max(r.Attempts, 1)
	}
	// The first wave's trials (concurrency 10: all of them) each had at most
	// 3 sandboxes, then the run stopped.
	if creates := srv.Calls(daytonatest.OpCreateSandbox); creates > 30 || creates < 3 {
		t.Errorf("%d sandboxes created", creates)
	}
	checkEmulator(t, srv, srv.APIKey())
}
