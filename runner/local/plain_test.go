//go:build linux

package local

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// plainJob is a plain job (runner.Job.Dir) running the Python script src,
// written into a fresh directory as script.py, with args after it.
func plainJob(t *testing.T, src string, args ...string) runner.Job {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return runner.Job{
		RunID: newRunID(t), CandidateID: "alpha", Trial: 2, Objective: "o",
		Command: append([]string{pythonPath(t), "script.py"}, args...),
		Dir:     dir,
		Timeout: 60 * time.Second,
	}
}

func TestRunPlainJobRunsInItsDirectoryAsIs(t *testing.T) {
	t.Parallel()
	// No LANG: the job then gets C.UTF-8.
	forgeEnv := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/forge-test", "TMPDIR": "/tmp/forge-test",
		"DAYTONA_API_KEY": "dtn_secret_key", "FORGE_OUTPUT": "/forge/own"}
	r := newRunner(t, Options{Getenv: func(k string) string { return forgeEnv[k] }})
	job := plainJob(t, `
import json, os, sys
open("left-here", "w").write("x")
print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}))
`, "it's \"$(quoted)\"\nverbatim", "/abs/artifact.md")
	job.Env = map[string]string{"MODE": "strict", "PATH": "/manifest/bin", "FORGE_ARTIFACT": "/abs/artifact.md"}
	job.OutputFile = "../not/checked.md"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "" || res.Submitted != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("plain job read something back: %+v", res)
	}
	var got struct {
		Argv []string
		Env  map[string]string
		Cwd  string
	}
	if err := json.Unmarshal([]byte(res.Output), &got); err != nil {
		t.Fatalf("output %q: %v", res.Output, err)
	}
	if want := job.Command[2:]; !slices.Equal(got.Argv, want) {
		t.Errorf("argv[1:] = %q, want %q (nothing appended)", got.Argv, want)
	}
	if got.Cwd != job.Dir {
		t.Errorf("cwd %q, want the job's Dir %q", got.Cwd, job.Dir)
	}
	want := map[string]string{
		"FORGE_ARTIFACT": "/abs/artifact.md", "FORGE_CANDIDATE_ID": "alpha", "FORGE_OBJECTIVE": "o",
		"FORGE_RUN_ID": job.RunID, "FORGE_TRIAL": "2", "MODE": "strict",
		"HOME": "/home/forge-test", "TMPDIR": "/tmp/forge-test", "LANG": "C.UTF-8", "PATH": os.Getenv("PATH"),
	}
	delete(got.Env, "LC_CTYPE") // Python's locale coercion may add it
	if !maps.Equal(got.Env, want) {
		t.Errorf("environment\n got %v\nwant %v", got.Env, want)
	}
	if _, err := os.Stat(filepath.Join(job.Dir, "left-here")); err != nil {
		t.Errorf("the job's directory was not left as the job left it: %v", err)
	}
	assertNoSurvivors(t, job.RunID)
}

func TestRunPlainJobRefusals(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	base := runner.Job{RunID: newRunID(t), CandidateID: "c", Trial: 1, Command: []string{"true"}, Dir: t.TempDir()}
	for name, c := range map[string]struct {
		edit func(*runner.Job)
		want string
	}{
		"relative dir": {func(j *runner.Job) { j.Dir = "rel" }, "is not absolute"},
		"missing dir":  {func(j *runner.Job) { j.Dir = filepath.Join(j.Dir, "gone") }, "is not a directory"},
		"files":        {func(j *runner.Job) { j.Files = []runner.File{{Src: "/etc/hostname", Dst: "x"}} }, "no files and no setup"},
		"setup":        {func(j *runner.Job) { j.Setup = []string{"true"} }, "no files and no setup"},
		"no command":   {func(j *runner.Job) { j.Command = nil }, "no command"},
	} {
		t.Run(name, func(t *testing.T) {
			job := base
			c.edit(&job)
			res := mustRun(t, r, job)
			assertKind(t, res, runner.ErrInfra)
			if !strings.Contains(res.ErrorMessage, c.want) {
				t.Errorf("message %q, want it to say %q", res.ErrorMessage, c.want)
			}
		})
	}
	job := base
	job.Command = []string{"./not-here"}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.RuntimeSeconds != 0 {
		t.Errorf("runtime %v for a command that never started", res.RuntimeSeconds)
	}
}

// A plain job is contained as a candidate is: its timeout ends it and
// everything it started, whatever ignores SIGTERM or detaches.
func TestRunPlainJobIsContained(t *testing.T) {
	eachTier(t, Options{KillGrace: 300 * time.Millisecond}, func(t *testing.T, r *Runner) {
		fifo, f := openDaemonFifo(t)
		job := plainJob(t, daemonScript, "objective", "/dev/null")
		job.Env = map[string]string{"DAEMON_FIFO": fifo}
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		assertDaemonGone(t, f)
		assertNoSurvivors(t, job.RunID)

		job = plainJob(t, `
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
`)
		job.Timeout = 2 * time.Second
		res = mustRun(t, r, job)
		assertKind(t, res, runner.ErrTimeout)
		if res.Output != "ready\n" {
			t.Fatalf("output %q: the job never got ready, the test proves nothing", res.Output)
		}
		assertNoSurvivors(t, job.RunID)
	})
}
