package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local"
	"github.com/forge-run/forge/runner/local/localtest"
	"github.com/forge-run/forge/scoring"
)

// python is the python3 interpreter itself (localtest.Python).
var python = sync.OnceValues(localtest.Python)

// judgeScorer writes the python judge src into dir and returns its scorer,
// whose command names the script relative to dir (the manifest's).
func judgeScorer(t *testing.T, dir, name, src string, timeout time.Duration) scoring.Scorer {
	t.Helper()
	py, err := python()
	if err != nil || py == "" {
		t.Fatalf("python3 is needed for the judge tests: %v", err)
	}
	// "j_" keeps the script from shadowing a module it imports (json.py).
	file := "j_" + name + ".py"
	if err := os.WriteFile(filepath.Join(dir, file), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return scoring.Scorer{Type: scoring.TypeJudge, Name: name, Command: []string{py, file}, Timeout: timeout}
}

var judgeRunSeq atomic.Int64

// judgeRun is one run of candidates alpha (succeeds with the artifact
// "# post") and beta (fails) judged by judges, in a manifest directory dir.
type judgeRun struct {
	m    *Manifest
	opts Options
}

func newJudgeRun(t *testing.T, dir string, judges ...scoring.Scorer) *judgeRun {
	t.Helper()
	m := &Manifest{Objective: "obj", Path: filepath.Join(dir, "forge.yaml"), Dir: dir, Hash: "sha256:test",
		Scoring: scoring.Config{Scorers: append([]scoring.Scorer{{Type: scoring.TypeSuccess}}, judges...)}}
	p := &Plan{Objective: "obj", Concurrency: 2, Trials: 1, Candidates: []string{"alpha", "beta"}}
	for _, id := range p.Candidates {
		p.Jobs = append(p.Jobs, runner.Job{CandidateID: id, Trial: 1, Objective: "obj", OutputFile: "out.md",
			Env: map[string]string{"MODE": "strict"}})
	}
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		var res runner.Result
		if job.CandidateID == "alpha" {
			res.SetArtifact([]byte("# post"), 6)
			res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
		} else {
			one := 1
			res.Settle(job, runner.Outcome{ExitCode: &one})
		}
		return res, nil
	}}
	lr, err := local.New(local.Options{TempDir: localtest.TempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.Close() })
	runID := fmt.Sprintf("judge-%d-%d", os.Getpid(), judgeRunSeq.Add(1))
	return &judgeRun{m: m, opts: Options{Manifest: m, Plan: p, Runner: fr, Judges: lr, Backend: "fake",
		OutRoot: t.TempDir(), RunID: runID}}
}

// run plays the run and returns alpha's judges; beta, which failed, must
// have none. No process of the run may outlive it.
func (jr *judgeRun) run(t *testing.T, ctx context.Context) []record.JudgeResult {
	t.Helper()
	rec, err := Run(ctx, jr.opts)
	if rec == nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rec.Results) != 2 {
		t.Fatalf("results %+v", rec.Results)
	}
	if rec.Results[1].Judges != nil {
		t.Errorf("the failed candidate was judged: %+v", rec.Results[1].Judges)
	}
	if pids := localtest.Survivors(jr.opts.RunID); len(pids) != 0 {
		t.Errorf("processes of the judges still alive after Run returned: %v", pids)
	}
	got := rec.Results[0].Judges
	for _, j := range got {
		if (j.Score == nil) == (j.Error == "") {
			t.Errorf("judge %+v: exactly one of Score and Error must be set", j)
		}
	}
	return got
}

func TestJudgeVerdicts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, src string
		score     float64
		reason    string
		errWant   string
	}{
		{"number", `print(0.75)`, 0.75, "", ""},
		{"one", `print("1")`, 1, "", ""},
		{"json", `import json; print(json.dumps({"score": 0.8, "reason": "good – ünïcode"}))`, 0.8, "good – ünïcode", ""},
		{"logs then verdict", "print('thinking...')\nprint('{\"score\": 0.25}')", 0.25, "", ""},
		{"garbage", `print("looks great!")`, 0, "", "judge printed no score"},
		{"nothing", `pass`, 0, "", "judge printed nothing"},
		{"above range", `print(1.5)`, 0, "", "outside [0, 1]"},
		{"nan", `print("nan")`, 0, "", "not a finite number"},
		{"verdict beyond the output cap", fmt.Sprintf("print('x' * %d)\nprint(0.5)", JudgeMaxOutput), 0, "", "judge printed no score"},
		{"non-zero exit", "import sys\nprint(0.9)\nsys.stderr.write('Traceback...\\nValueError: bad artifact\\n')\nsys.exit(3)", 0, "", "judge exited with status 3: ValueError: bad artifact"},
		{"killed", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", 0, "", "judge was killed by a signal"},
	}
	var judges []scoring.Scorer
	for _, c := range cases {
		judges = append(judges, judgeScorer(t, dir, strings.ReplaceAll(c.name, " ", "_"), c.src, 20*time.Second))
	}
	got := newJudgeRun(t, dir, judges...).run(t, context.Background())
	if len(got) != len(cases) {
		t.Fatalf("%d judge results, want %d: %+v", len(got), len(cases), got)
	}
	for i, c := range cases {
		j := got[i]
		if j.Name != judges[i].Name {
			t.Errorf("result %d is %q, want %q (the scorers' order)", i, j.Name, judges[i].Name)
		}
		if c.errWant != "" {
			if !strings.Contains(j.Error, c.errWant) {
				t.Errorf("%s: error = %q, want it to contain %q", c.name, j.Error, c.errWant)
			}
			continue
		}
		if j.Error != "" || j.Score == nil || *j.Score != c.score || j.Reason != c.reason {
			t.Errorf("%s: got %+v, want score %v reason %q", c.name, j, c.score, c.reason)
		}
	}
}

func TestJudgeArgvEnvAndDir(t *testing.T) {
	// t.Setenv and t.Chdir: not parallel. The judges' runner reads forge's
	// real environment.
	t.Setenv("FORGE_SECRET_TEST", "leak")
	t.Setenv("DAYTONA_API_KEY", "dtn_secret")
	dir := t.TempDir()
	s := judgeScorer(t, dir, "env", `
import json, os, sys
print(json.dumps({"score": 1, "reason": json.dumps({"argv": sys.argv[1:], "env": dict(os.environ),
    "cwd": os.getcwd(), "artifact": open(sys.argv[2]).read()})}))
`, 20*time.Second)
	jr := newJudgeRun(t, dir, s)
	objective := "it's \"$(quoted)\"\nand multi-line"
	for i := range jr.opts.Plan.Jobs {
		jr.opts.Plan.Jobs[i].Objective = objective
	}
	// A relative output root: the judge still gets the artifact's absolute
	// path, although it runs elsewhere (in the manifest's directory).
	t.Chdir(t.TempDir())
	jr.opts.OutRoot = "artifacts"
	got := jr.run(t, context.Background())
	if len(got) != 1 || got[0].Error != "" {
		t.Fatalf("judges %+v", got)
	}
	var seen struct {
		Argv     []string
		Env      map[string]string
		Cwd      string
		Artifact string
	}
	if err := json.Unmarshal([]byte(got[0].Reason), &seen); err != nil {
		t.Fatalf("reason %q: %v", got[0].Reason, err)
	}
	cwd, _ := os.Getwd()
	artifact := filepath.Join(cwd, "artifacts", jr.opts.RunID, "alpha", "out.md")
	if want := []string{objective, artifact}; strings.Join(seen.Argv, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("argv = %q, want %q", seen.Argv, want)
	}
	if seen.Artifact != "# post" {
		t.Errorf("the judge read %q at its artifact path, want the stored artifact", seen.Artifact)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if seen.Cwd != realDir && seen.Cwd != dir {
		t.Errorf("cwd = %q, want the manifest's directory %q", seen.Cwd, dir)
	}
	want := map[string]string{
		"FORGE_OBJECTIVE": objective, "FORGE_ARTIFACT": artifact, "FORGE_CANDIDATE_ID": "alpha",
		"FORGE_TRIAL": "1", "FORGE_RUN_ID": jr.opts.RunID, "MODE": "strict",
	}
	for k, v := range want {
		if seen.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, seen.Env[k], v)
		}
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TMPDIR": true, "LC_CTYPE": true}
	for k := range seen.Env {
		if _, ok := want[k]; !ok && !allowed[k] {
			t.Errorf("unexpected variable %s in the judge's environment", k)
		}
	}
	if seen.Env["PATH"] != os.Getenv("PATH") {
		t.Errorf("PATH %q, want forge's", seen.Env["PATH"])
	}
}

func TestJudgeStartFailure(t *testing.T) {
	t.Parallel()
	s := scoring.Scorer{Type: scoring.TypeJudge, Name: "j", Command: []string{"./does-not-exist"}}
	got := newJudgeRun(t, t.TempDir(), s).run(t, context.Background())
	if len(got) != 1 || !strings.HasPrefix(got[0].Error, "cannot start judge: ./does-not-exist") {
		t.Errorf("judges %+v", got)
	}
}

func TestJudgeTimeoutEndsEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := judgeScorer(t, dir, "slow", `
import subprocess, time
p = subprocess.Popen(["sleep", "300"])
open("child.started", "w").write("1")
time.sleep(300)
print(1)
`, 2*time.Second)
	got := newJudgeRun(t, dir, s).run(t, context.Background()) // checks that sleep is gone
	if len(got) != 1 || got[0].Error != "judge timed out after 2s" {
		t.Errorf("judges %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "child.started")); err != nil {
		t.Errorf("the judge never started its child, the test proves nothing: %v", err)
	}
}

func TestJudgeIgnoringSIGTERMIsKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := judgeScorer(t, dir, "stubborn", `
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open("ready", "w").write("1")
time.sleep(300)
`, 2*time.Second)
	jr := newJudgeRun(t, dir, s)
	done := make(chan []record.JudgeResult, 1)
	start := time.Now()
	go func() { done <- jr.run(t, context.Background()) }()
	select {
	case got := <-done:
		if len(got) != 1 || !strings.Contains(got[0].Error, "timed out") {
			t.Errorf("judges %+v", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return: SIGKILL escalation failed")
	}
	// The judge ignored SIGTERM before its timeout came, so only SIGKILL,
	// a grace period after SIGTERM, can have ended it.
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		t.Fatalf("the judge never got ready, so SIGKILL was not tested: %v", err)
	}
	if took := time.Since(start); took < 2*time.Second+local.DefaultKillGrace {
		t.Errorf("returned after %v: before the SIGKILL that a judge ignoring SIGTERM needs", took)
	}
}

func TestJudgeStragglerIsKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The judge answers and exits, leaving a background child that holds
	// its stdout open.
	s := judgeScorer(t, dir, "straggler", `
import subprocess, sys
p = subprocess.Popen(["sleep", "300"])
open("child.started", "w").write("1")
print(0.5)
sys.stdout.flush()
`, 20*time.Second)
	start := time.Now()
	got := newJudgeRun(t, dir, s).run(t, context.Background()) // checks that sleep is gone
	if len(got) != 1 || got[0].Score == nil || *got[0].Score != 0.5 {
		t.Errorf("judges %+v, want 0.5", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "child.started")); err != nil {
		t.Errorf("the judge never started its child, the test proves nothing: %v", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v: the straggler held the run up", took)
	}
}

func TestJudgeCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := judgeScorer(t, dir, "waits", `
open("started", "w").write("1")
import time; time.sleep(300)
`, 20*time.Second)
	jr := newJudgeRun(t, dir, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan []record.JudgeResult, 1)
	go func() { done <- jr.run(t, ctx) }()
	wait.For(t, "the judge to start", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	cancel()
	select {
	case got := <-done:
		if len(got) != 1 || got[0].Error != "cancelled while judging" {
			t.Errorf("judges %+v", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the judge ignored cancellation")
	}

	st := &state{o: &jr.opts}
	if got := st.judge(ctx, s, runner.Job{CandidateID: "alpha", Trial: 1}, "/abs/out.md"); got.Error != "cancelled before the judge started" {
		t.Errorf("already cancelled: %+v", got)
	}
}

func TestRunRefusesJudgesWithoutRunner(t *testing.T) {
	t.Parallel()
	jr := newJudgeRun(t, t.TempDir(), scoring.Scorer{Type: scoring.TypeJudge, Name: "q", Command: []string{"true"}})
	jr.opts.Judges = nil
	if _, err := Run(context.Background(), jr.opts); err == nil || !strings.Contains(err.Error(), "no runner for them") {
		t.Errorf("Run without a runner for the judges: %v", err)
	}
	jr.m.Scoring = scoring.Config{}
	if _, err := Run(context.Background(), jr.opts); err != nil {
		t.Errorf("Run without judges nor their runner: %v", err)
	}
}

// TestJudgeProgramMustExist: a judge whose program is nowhere stops the
// manifest before anything runs (it would fail every verdict), at its key.
func TestJudgeProgramMustExist(t *testing.T) {
	dir := writeTree(t, map[string]string{"forge.yaml": `objective: x
candidates:
  - {id: a, script: a.py}
scoring:
  - type: judge
    command: [no-such-judge-program-xyz]
  - type: judge
    name: file
    command: [judges/missing.py]
`, "a.py": okScript})
	_, err := Load(filepath.Join(dir, "forge.yaml"))
	for _, want := range []string{`scoring[0].command[0]: "no-such-judge-program-xyz" is not a program on PATH here`, "scoring[1].command[0]: judges/missing.py: no such file or directory"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

// TestVerifyCommandNamesItsFiles: a verifier whose command names a file
// its directory does not hold stops the manifest (every verify would
// fail), at the task's verify.
func TestVerifyCommandNamesItsFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{"forge.yaml": `objective: x
defaults:
  verify: {dir: checks, command: 'sh "$FORGE_TESTS_DIR/check.sh"'}
tasks:
  - {id: ok}
  - {id: typo, verify: {command: 'sh "$FORGE_TESTS_DIR/chekc.sh"'}}
candidates:
  - {id: a, script: a.py}
`, "a.py": okScript, "checks/check.sh": "echo 1 > \"$FORGE_VERIFIER_LOGS/reward.txt\"\n"})
	_, err := Load(filepath.Join(dir, "forge.yaml"))
	if err == nil || !strings.Contains(err.Error(), "tasks[1].verify.command: names $FORGE_TESTS_DIR/chekc.sh, but checks does not hold it") ||
		strings.Contains(err.Error(), "tasks[0]") {
		t.Errorf("error %v", err)
	}
}
