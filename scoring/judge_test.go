package scoring

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// judgeScript writes a python judge into dir and returns its scorer.
func judgeScript(t *testing.T, dir, name, src string, timeout time.Duration) Scorer {
	t.Helper()
	// "j_" keeps the script from shadowing a module it imports (json.py).
	path := filepath.Join(dir, "j_"+name+".py")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return Scorer{Type: TypeJudge, Name: name, Command: []string{python(t), "j_" + name + ".py"}, Timeout: timeout}
}

var pythonExe struct {
	sync.Once
	path string
	err  error
}

// python is the python3 interpreter itself, not a version manager's shim
// script: quicker to start, and it adds no variables of its own.
func python(t *testing.T) string {
	t.Helper()
	pythonExe.Do(func() {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		pythonExe.path, pythonExe.err = strings.TrimSpace(string(out)), err
	})
	if pythonExe.err != nil || pythonExe.path == "" {
		t.Fatalf("python3: %v", pythonExe.err)
	}
	return pythonExe.path
}

func runOne(t *testing.T, s Scorer, in JudgeInput) (score *float64, reason, errMsg string) {
	t.Helper()
	res := RunJudges(context.Background(), Config{Scorers: []Scorer{s}}, in)
	if len(res) != 1 || res[0].Name != s.Name {
		t.Fatalf("RunJudges = %+v, want one result named %q", res, s.Name)
	}
	if (res[0].Score == nil) == (res[0].Error == "") {
		t.Fatalf("result %+v: exactly one of Score and Error must be set", res[0])
	}
	return res[0].Score, res[0].Reason, res[0].Error
}

func TestJudgeVerdicts(t *testing.T) {
	dir := t.TempDir()
	in := JudgeInput{WorkDir: dir, ArtifactPath: filepath.Join(dir, "out.md"), Objective: "o"}
	for _, c := range []struct {
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
		{"negative", `print('{"score": -0.1}')`, 0, "", "outside [0, 1]"},
		{"nan", `print("nan")`, 0, "", "not a finite number"},
		{"inf json", `print('{"score": 1e999}')`, 0, "", "not a number"},
		{"score as text", `print('{"score": "0.5"}')`, 0, "", `"score" is not a number`},
		{"no score key", `print('{"reason": "meh"}')`, 0, "", `has no "score"`},
		{"non-zero exit", "import sys\nprint(0.9)\nsys.stderr.write('Traceback...\\nValueError: bad artifact\\n')\nsys.exit(3)", 0, "", "judge exited with status 3: ValueError: bad artifact"},
		{"killed", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", 0, "", "judge was killed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := judgeScript(t, dir, strings.ReplaceAll(c.name, " ", "_"), c.src, 20*time.Second)
			score, reason, errMsg := runOne(t, s, in)
			if c.errWant != "" {
				if !strings.Contains(errMsg, c.errWant) {
					t.Errorf("error = %q, want it to contain %q", errMsg, c.errWant)
				}
				return
			}
			if errMsg != "" || *score != c.score || reason != c.reason {
				t.Errorf("got score %v reason %q error %q, want %v %q", score, reason, errMsg, c.score, c.reason)
			}
		})
	}
}

func TestJudgeArgvAndEnv(t *testing.T) {
	dir := t.TempDir()
	s := judgeScript(t, dir, "env", `
import json, os, sys
print(json.dumps({"score": 1, "reason": json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()})}))
`, 20*time.Second)
	t.Setenv("FORGE_SECRET_TEST", "leak")
	in := JudgeInput{
		RunID: "run-1", CandidateID: "alpha", Trial: 3,
		Objective:    "it's \"$(quoted)\"\nand multi-line",
		ArtifactPath: "/abs/alpha/output.md", WorkDir: dir,
		Env: map[string]string{"MODE": "strict", "FORGE_TRIAL": "overridden?"},
	}
	_, reason, errMsg := runOne(t, s, in)
	if errMsg != "" {
		t.Fatal(errMsg)
	}
	var got struct {
		Argv []string
		Env  map[string]string
		Cwd  string
	}
	if err := json.Unmarshal([]byte(reason), &got); err != nil {
		t.Fatalf("reason %q: %v", reason, err)
	}
	if want := []string{in.Objective, in.ArtifactPath}; strings.Join(got.Argv, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("argv = %q, want %q", got.Argv, want)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if got.Cwd != realDir && got.Cwd != dir {
		t.Errorf("cwd = %q, want %q", got.Cwd, dir)
	}
	want := map[string]string{
		"FORGE_OBJECTIVE": in.Objective, "FORGE_ARTIFACT": in.ArtifactPath, "FORGE_CANDIDATE_ID": "alpha",
		"FORGE_TRIAL": "3", "FORGE_RUN_ID": "run-1", "MODE": "strict",
	}
	for k, v := range want {
		if got.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, got.Env[k], v)
		}
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TMPDIR": true, "LC_CTYPE": true}
	for k := range got.Env {
		if _, ok := want[k]; !ok && !allowed[k] {
			t.Errorf("unexpected variable %s in the judge's environment", k)
		}
	}
	if got.Env["PATH"] == "" {
		t.Error("PATH missing")
	}
}

func TestJudgeStartFailure(t *testing.T) {
	s := Scorer{Type: TypeJudge, Name: "j", Command: []string{"./does-not-exist"}}
	_, _, errMsg := runOne(t, s, JudgeInput{WorkDir: t.TempDir()})
	if !strings.Contains(errMsg, "cannot start judge") {
		t.Errorf("error = %q", errMsg)
	}
}

// pidGone waits (with a deadline) until pid no longer runs; a zombie
// counts as gone.
func pidGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
	t.Errorf("process %d still running after the judge ended", pid)
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the judge did not record its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestJudgeTimeoutKillsGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to observe the judge's child")
	}
	dir := t.TempDir()
	s := judgeScript(t, dir, "slow", `
import subprocess, time
p = subprocess.Popen(["sleep", "300"])
open("child.pid", "w").write(str(p.pid))
time.sleep(300)
print(1)
`, 2*time.Second)
	_, _, errMsg := runOne(t, s, JudgeInput{WorkDir: dir})
	if errMsg != "judge timed out after 2s" {
		t.Errorf("error = %q", errMsg)
	}
	pidGone(t, readPid(t, filepath.Join(dir, "child.pid")))
}

func TestJudgeIgnoringSIGTERMIsKilled(t *testing.T) {
	dir := t.TempDir()
	s := judgeScript(t, dir, "stubborn", `
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open("ready", "w").write("1")
time.sleep(300)
`, 2*time.Second)
	done := make(chan string, 1)
	start := time.Now()
	go func() { _, _, e := runOne(t, s, JudgeInput{WorkDir: dir}); done <- e }()
	select {
	case errMsg := <-done:
		if !strings.Contains(errMsg, "timed out") {
			t.Errorf("error = %q", errMsg)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("RunJudges did not return: SIGKILL escalation failed")
	}
	// The judge ignored SIGTERM before its timeout came, so only SIGKILL,
	// a grace period after SIGTERM, can have ended it.
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		t.Fatalf("the judge never got ready, so SIGKILL was not tested: %v", err)
	}
	if took := time.Since(start); took < 2*time.Second+judgeKillGrace {
		t.Errorf("returned after %v: before the SIGKILL that a judge ignoring SIGTERM needs", took)
	}
}

func TestJudgeStragglerIsKilled(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to observe the judge's child")
	}
	dir := t.TempDir()
	// The judge answers and exits, leaving a background child that holds
	// its stdout open.
	s := judgeScript(t, dir, "straggler", `
import subprocess, sys
p = subprocess.Popen(["sleep", "300"])
open("child.pid", "w").write(str(p.pid))
print(0.5)
sys.stdout.flush()
`, 20*time.Second)
	score, _, errMsg := runOne(t, s, JudgeInput{WorkDir: dir})
	if errMsg != "" || *score != 0.5 {
		t.Errorf("score %v error %q, want 0.5", score, errMsg)
	}
	pidGone(t, readPid(t, filepath.Join(dir, "child.pid")))
}

func TestJudgeCancelled(t *testing.T) {
	dir := t.TempDir()
	s := judgeScript(t, dir, "waits", `
open("started", "w").write("1")
import time; time.sleep(300)
`, 20*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan string, 1)
	go func() {
		res := RunJudges(ctx, Config{Scorers: []Scorer{s}}, JudgeInput{WorkDir: dir})
		done <- res[0].Error
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("judge never started")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
	cancel()
	select {
	case e := <-done:
		if e != "cancelled while judging" {
			t.Errorf("error = %q", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RunJudges ignored cancellation")
	}
	res := RunJudges(ctx, Config{Scorers: []Scorer{s}}, JudgeInput{WorkDir: dir})
	if res[0].Error != "cancelled before the judge started" {
		t.Errorf("already cancelled: %+v", res[0])
	}
}

func TestRunJudgesOnlyJudges(t *testing.T) {
	if res := RunJudges(context.Background(), Config{}, JudgeInput{}); res != nil {
		t.Errorf("default config has no judges, got %+v", res)
	}
	dir := t.TempDir()
	a := judgeScript(t, dir, "a", "print(0.1)", 20*time.Second)
	b := judgeScript(t, dir, "b", "print(0.2)", 20*time.Second)
	res := RunJudges(context.Background(), Config{Scorers: []Scorer{{Type: TypeSuccess}, a, b}}, JudgeInput{WorkDir: dir})
	if len(res) != 2 || res[0].Name != "a" || *res[0].Score != 0.1 || res[1].Name != "b" || *res[1].Score != 0.2 {
		t.Errorf("got %+v", res)
	}
}

func TestParseVerdictLongReasonCapped(t *testing.T) {
	long := strings.Repeat("é", 3000)
	_, reason, err := ParseVerdict([]byte(`{"score": 0.5, "reason": "` + long + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(reason) > maxReason+len("…") || !strings.HasSuffix(reason, "…") {
		t.Errorf("reason not capped: %d bytes", len(reason))
	}
}
