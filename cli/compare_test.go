package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// forgeRun runs the forge command line in-process and returns its stdout,
// stderr and exit code.
func forgeRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return out.String(), errb.String(), code
}

// testRun builds a record with per-trial scores: candidate id → scores, in
// standings order (best mean first is up to the caller).
func testRun(id string, started time.Time, winner string, cands ...any) *record.Record {
	rec := &record.Record{SchemaVersion: 1, RunID: id, Backend: "local", Objective: "o", ManifestHash: "h",
		StartedAt: started, FinishedAt: started.Add(time.Second)}
	if winner != "" {
		rec.Winner = &winner
	}
	for i := 0; i+1 < len(cands); i += 2 {
		cid, scores := cands[i].(string), cands[i+1].([]float64)
		st := record.Standing{Rank: len(rec.Standings) + 1, CandidateID: cid, Trials: len(scores),
			ScoredTrials: len(scores), Successes: len(scores), SuccessRate: 1, RuntimeMeanSeconds: 1}
		for n, s := range scores {
			v := s
			rec.Results = append(rec.Results, record.Trial{Result: runner.Result{CandidateID: cid, Trial: n + 1, Success: true,
				RuntimeSeconds: 1}, Score: &v})
			st.Score += s / float64(len(scores))
		}
		rec.Standings = append(rec.Standings, st)
	}
	return rec
}

func writeTestRun(t *testing.T, out string, rec *record.Record) {
	t.Helper()
	b, err := record.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, rec.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// nightlyRuns writes two runs under a fresh output root: alpha regresses by
// 0.3 (significantly), beta stays put, gamma is new.
func nightlyRuns(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "artifacts")
	d := func(day int) time.Time { return time.Date(2026, 11, day, 15, 30, 0, 0, time.UTC) }
	writeTestRun(t, out, testRun("mon", d(20), "alpha",
		"alpha", []float64{0.9, 0.92, 0.88, 0.91},
		"beta", []float64{0.8, 0.7, 0.9, 0.8}))
	writeTestRun(t, out, testRun("tue", d(21), "beta",
		"beta", []float64{0.81, 0.71, 0.9, 0.79},
		"alpha", []float64{0.6, 0.62, 0.58, 0.61},
		"gamma", []float64{0.5}))
	return out
}

func TestCompareTable(t *testing.T) {
	out := nightlyRuns(t)
	stdout, stderr, code := forgeRun(t, "compare", "mon", "tue", "--out", out)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"base mon (2026-11-20 15:30)  →  head tue (2026-11-21 15:30)",
		"\nCANDIDATE  STATUS ",
		"\nbeta       unchanged  0.80  0.80  +0.0025  p = 0.97",
		"\nalpha      regressed  0.90  0.60    -0.30  p < 0.001",
		"\ngamma      new           —  0.50        —  —",
		"\nwinner: alpha → beta\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.ContainsAny(stdout, "┌│") {
		t.Errorf("not a terminal, yet the table has borders:\n%s", stdout)
	}
}

func TestCompareMaxDrop(t *testing.T) {
	out := nightlyRuns(t)
	_, stderr, code := forgeRun(t, "compare", "mon", "tue", "--out", out, "--max-drop", "0.1")
	if code != ExitGateFailed {
		t.Errorf("--max-drop 0.1: exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "forge: regression: alpha: score dropped 0.30 (0.90 → 0.60, p < 0.001)") {
		t.Errorf("stderr = %q, want one regression line for alpha", stderr)
	}
	if _, stderr, code := forgeRun(t, "compare", "mon", "tue", "--out", out, "--max-drop", "0.35"); code != 0 || stderr != "" {
		t.Errorf("--max-drop 0.35: exit %d, stderr %q; want 0 and quiet (the drop is 0.30)", code, stderr)
	}
	// The runs the other way round: alpha improved, nothing dropped.
	if _, _, code := forgeRun(t, "compare", "tue", "mon", "--out", out, "--max-drop", "0"); code != 0 {
		t.Errorf("reversed with --max-drop 0: exit %d, want 0", code)
	}
}

func TestCompareFormats(t *testing.T) {
	out := nightlyRuns(t)
	stdout, _, code := forgeRun(t, "compare", "mon", "tue", "--out", out, "--format", "json")
	if code != 0 {
		t.Fatalf("json: exit %d", code)
	}
	var rep struct {
		Base struct {
			RunID string `json:"run_id"`
		} `json:"base"`
		Candidates []struct {
			CandidateID string   `json:"candidate_id"`
			Status      string   `json:"status"`
			ScoreDelta  *float64 `json:"score_delta"`
		} `json:"candidates"`
		WinnerChanged bool `json:"winner_changed"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--format json is not JSON: %v\n%s", err, stdout)
	}
	if rep.Base.RunID != "mon" || len(rep.Candidates) != 3 || rep.Candidates[1].Status != "regressed" ||
		rep.Candidates[2].Status != "new" || rep.Candidates[2].ScoreDelta != nil || !rep.WinnerChanged {
		t.Errorf("json report = %+v", rep)
	}

	stdout, _, code = forgeRun(t, "compare", "mon", "tue", "--out", out, "--format", "md")
	if code != 0 || !strings.HasPrefix(stdout, "### forge compare `mon` → `tue`\n") ||
		!strings.Contains(stdout, "| alpha | **📉 regressed** | 0.90 | 0.60 | -0.30 |") {
		t.Errorf("markdown: exit %d\n%s", code, stdout)
	}
}

// A run is a run id, a run directory or a results.json path.
func TestCompareRefs(t *testing.T) {
	out := nightlyRuns(t)
	stdout, _, code := forgeRun(t, "compare", filepath.Join(out, "mon"), filepath.Join(out, "tue", "results.json"), "--format", "json")
	if code != 0 || !strings.Contains(stdout, `"run_id": "tue"`) {
		t.Errorf("by paths: exit %d\n%s", code, stdout)
	}
}

func TestCompareUsageErrors(t *testing.T) {
	out := nightlyRuns(t)
	if err := os.WriteFile(filepath.Join(out, "junk.json"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "mon", "wed", "--out", out}, "forge: run wed: no such run in " + out},
		{[]string{"compare", "mon", filepath.Join(out, "junk.json"), "--out", out}, "junk.json: not a results.json: not JSON"},
		{[]string{"compare", "mon", "--out", out}, "compare takes two runs (RUN_A RUN_B), got 1\nRun 'forge compare --help' for usage."},
		{[]string{"compare", "mon", "tue", "--out", out, "--format", "csv"}, `--format "csv": want one of table, markdown, json`},
		{[]string{"compare", "mon", "tue", "--out", out, "--max-drop", "5"}, "--max-drop 5: must be between 0 and 1"},
		{[]string{"compare", "mon", "tue", "--max-drop", "x"}, `invalid argument "x" for "--max-drop"`},
	} {
		stdout, stderr, code := forgeRun(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args[1:], code, stdout, stderr, tc.want)
		}
	}
}

func TestHistoryCommand(t *testing.T) {
	out := nightlyRuns(t)
	if err := os.MkdirAll(filepath.Join(out, "crashed"), 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := forgeRun(t, "history", "--out", out)
	want := "2026-11-21 15:30  tue  local ×4  winner beta 0.80  alpha 0.60 gamma 0.50\n" +
		"2026-11-20 15:30  mon  local ×4  winner alpha 0.90  beta 0.80\n"
	if code != 0 || stdout != want {
		t.Errorf("history: exit %d\n%s\nwant\n%s", code, stdout, want)
	}
	if stderr != "forge: history: skipped "+filepath.Join(out, "crashed")+": no results.json\n" {
		t.Errorf("stderr = %q, want a note for the directory without results.json", stderr)
	}

	stdout, _, code = forgeRun(t, "history", "--out", out, "--last", "1")
	if code != 0 || stdout != strings.SplitAfter(want, "\n")[0] {
		t.Errorf("--last 1: exit %d\n%s", code, stdout)
	}

	stdout, _, code = forgeRun(t, "history", "--out", out, "--format", "json")
	var es []struct {
		RunID  string `json:"run_id"`
		Winner string `json:"winner"`
	}
	if err := json.Unmarshal([]byte(stdout), &es); err != nil || code != 0 || len(es) != 2 || es[0].RunID != "tue" || es[1].Winner != "alpha" {
		t.Errorf("--format json: exit %d, %v, %+v\n%s", code, err, es, stdout)
	}

	if _, stderr, code := forgeRun(t, "history", "--out", filepath.Join(out, "nope")); code != ExitUsage || !strings.Contains(stderr, "does not exist") {
		t.Errorf("missing --out: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := forgeRun(t, "history", "--last", "-1"); code != ExitUsage {
		t.Errorf("--last -1: exit %d, want 2", code)
	}
	empty := t.TempDir()
	if stdout, stderr, code := forgeRun(t, "history", "--out", empty); code != 0 || stdout != "" || stderr != "forge: no runs in "+empty+"\n" {
		t.Errorf("empty root: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestBaselineReport(t *testing.T) {
	out := nightlyRuns(t)
	head, err := record.Read(filepath.Join(out, "tue", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := &Env{Stdout: &stdout, Stderr: &stderr}
	drops, err := baselineReport(env, out, "mon", head, 0.1, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(drops) != 1 || !strings.HasPrefix(drops[0], "alpha: score dropped 0.30") {
		t.Errorf("drops = %q, want alpha", drops)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "alpha      regressed") {
		t.Errorf("the table goes to stderr only: stdout %q, stderr %q", stdout.String(), stderr.String())
	}

	if drops, err := baselineReport(env, out, "mon", head, 0.1, false); err != nil || drops != nil {
		t.Errorf("without --max-drop: drops %q, err %v; want none", drops, err)
	}

	_, err = baselineReport(env, out, "sun", head, 0, false)
	if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--baseline: run sun: no such run") {
		t.Errorf("missing baseline: %v (exit %d), want a usage error", err, exitCode(err))
	}
	if err := checkBaseline(out, "mon"); err != nil {
		t.Errorf("checkBaseline(mon) = %v", err)
	}
	if err := checkBaseline(out, "sun"); exitCode(err) != ExitUsage {
		t.Errorf("checkBaseline(sun) = %v, want a usage error", err)
	}
}
