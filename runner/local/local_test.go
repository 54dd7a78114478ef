//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

func TestRunHappyPath(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "alpha", `
import json, os, sys
obj, out = sys.argv[1], sys.argv[2]
print("[Alpha] Found 10 events")
print("second line")
with open(out, "w") as f:
    f.write("# AI Events\n" + obj)
with open(os.environ["FORGE_RESULT"], "w") as f:
    json.dump({"items": 10, "accuracy": 0.93, "name": "alpha"}, f)
seen = {k: os.environ.get(k) for k in ["FORGE_OBJECTIVE", "FORGE_OUTPUT", "FORGE_RESULT", "FORGE_TRANSCRIPT",
        "FORGE_CANDIDATE_ID", "FORGE_TRIAL", "FORGE_RUN_ID", "HOME", "TMPDIR", "PYTHONUNBUFFERED", "MODE"]}
seen["cwd"] = os.getcwd()
seen["argv2"] = out
seen["tmpdir_is_dir"] = os.path.isdir(os.environ["TMPDIR"])
print("ENV " + json.dumps(seen), file=sys.stderr)
`)
	job.Command[0] = "python3" // resolved with the candidate's PATH
	job.Trial = 2
	job.Env = map[string]string{"MODE": "fast", "FORGE_TRIAL": "manifest cannot override this"}
	var mu sync.Mutex
	var phases []runner.Phase
	job.Progress = func(p runner.Phase) {
		mu.Lock()
		defer mu.Unlock()
		phases = append(phases, p)
	}

	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("exit code %v, want 0", res.ExitCode)
	}
	if want := "[Alpha] Found 10 events\nsecond line\n"; res.Output != want {
		t.Errorf("output %q, want %q", res.Output, want)
	}
	if want := "# AI Events\nGenerate weekly AI events"; res.ArtifactContent != want || string(res.Artifact) != want {
		t.Errorf("artifact %q / %q, want %q", res.ArtifactContent, res.Artifact, want)
	}
	if res.ArtifactBytes != int64(len(res.ArtifactContent)) || res.ArtifactTruncated || res.ArtifactEncoding != "" {
		t.Errorf("artifact bytes %d truncated %v encoding %q", res.ArtifactBytes, res.ArtifactTruncated, res.ArtifactEncoding)
	}
	wantSub := map[string]any{"items": 10.0, "accuracy": 0.93, "name": "alpha"}
	if !maps.Equal(res.Submitted, wantSub) || res.SubmitError != "" {
		t.Errorf("submitted %v (error %q), want %v", res.Submitted, res.SubmitError, wantSub)
	}
	if res.Backend != "local" || res.SandboxID != "" || res.CandidateID != "alpha" || res.Trial != 2 {
		t.Errorf("backend %q sandbox %q candidate %q trial %d", res.Backend, res.SandboxID, res.CandidateID, res.Trial)
	}

	_, envJSON, ok := strings.Cut(res.Stderr, "ENV ")
	if !ok {
		t.Fatalf("no ENV line in stderr %q", res.Stderr)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(envJSON), &env); err != nil {
		t.Fatal(err)
	}
	home, _ := env["HOME"].(string)
	if !strings.HasPrefix(home, filepath.Join(r.opts.TempDir, fmt.Sprintf("forge-%d-alpha-", os.Getpid()))) {
		t.Errorf("HOME %q is not a fresh working directory under %s", home, r.opts.TempDir)
	}
	for k, want := range map[string]any{
		"cwd":                home,
		"FORGE_OUTPUT":       filepath.Join(home, "output.md"),
		"argv2":              filepath.Join(home, "output.md"),
		"FORGE_RESULT":       filepath.Join(home, runner.ResultFile),
		"FORGE_TRANSCRIPT":   filepath.Join(home, runner.TranscriptFile),
		"TMPDIR":             filepath.Join(home, "tmp"),
		"tmpdir_is_dir":      true,
		"PYTHONUNBUFFERED":   "1",
		"FORGE_OBJECTIVE":    "Generate weekly AI events",
		"FORGE_CANDIDATE_ID": "alpha",
		"FORGE_TRIAL":        "2",
		"FORGE_RUN_ID":       job.RunID,
		"MODE":               "fast",
	} {
		if env[k] != want {
			t.Errorf("candidate saw %s=%v, want %v", k, env[k], want)
		}
	}
	r.Close() // the working directory may still be being removed
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working directory %s still there after Run and Close (stat: %v)", home, err)
	}
	if left := leftovers(t, r.opts.TempDir); len(left) != 0 {
		t.Errorf("Run left %v in its temp dir", left)
	}

	mu.Lock()
	// Making the job's box (its PID namespace or cgroup) is "create".
	want := []runner.Phase{runner.PhaseUpload, runner.PhaseCreate, runner.PhaseExecute, runner.PhaseDownload, runner.PhaseCleanup}
	if !slices.Equal(phases, want) {
		t.Errorf("phases announced %v, want %v", phases, want)
	}
	mu.Unlock()
	if res.Phases.Execute <= 0 || res.Phases.Create < 0 || res.Phases.Setup != 0 {
		t.Errorf("phases %+v: want execute > 0, create ≥ 0 and setup 0", res.Phases)
	}
	sum := res.Phases.Create + res.Phases.Upload + res.Phases.Execute + res.Phases.Download + res.Phases.Cleanup
	if res.JobSeconds < sum || !res.FinishedAt.After(res.StartedAt) || res.StartedAt.Location() != time.UTC {
		t.Errorf("job %.3fs for phases totalling %.3fs, started %v finished %v", res.JobSeconds, sum, res.StartedAt, res.FinishedAt)
	}
	// The candidate's process runs within the execute phase.
	if res.RuntimeSeconds <= 0 || res.RuntimeSeconds > res.Phases.Execute {
		t.Errorf("runtime %.6fs, execute phase %.6fs", res.RuntimeSeconds, res.Phases.Execute)
	}

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"sandbox_id":null`)) || !bytes.Contains(b, []byte(`"error_kind":null`)) {
		t.Errorf("record %s: want sandbox_id and error_kind null", b)
	}
}

func TestRunEnvironmentIsExactlyTheProtocols(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("DAYTONA_API_KEY", "dtn_secret_key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	t.Setenv("LANG", "") // the candidate then gets C.UTF-8
	r := newRunner(t, Options{})
	// Which of forge's PATH the candidate may search: when forge is root it
	// runs as a user of its own, and its PATH is what that user can reach.
	job := pyJob(t, "envdump", fmt.Sprintf(`
import json, os, sys
search = [d for d in %q.split(":") if os.access(d, os.X_OK)]
with open(sys.argv[2], "w") as f:
    json.dump({"env": dict(os.environ), "search": search}, f)
`, os.Getenv("PATH")))
	job.Env = map[string]string{"MODE": "fast"}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	var seen struct {
		Env    map[string]string
		Search []string
	}
	if err := json.Unmarshal(res.Artifact, &seen); err != nil {
		t.Fatalf("artifact %q: %v", res.Artifact, err)
	}
	env := seen.Env
	if strings.Contains(string(res.Artifact), "secret") {
		t.Errorf("a secret of forge's environment reached the candidate: %s", res.Artifact)
	}
	want := []string{"FORGE_CANDIDATE_ID", "FORGE_OBJECTIVE", "FORGE_OUTPUT", "FORGE_RESULT", "FORGE_RUN_ID",
		"FORGE_TRANSCRIPT", "FORGE_TRIAL", "HOME", "LANG", "MODE", "PATH", "PYTHONUNBUFFERED", "TMPDIR"}
	if got := slices.Sorted(maps.Keys(env)); !slices.Equal(got, want) {
		t.Errorf("candidate environment has %v, want exactly %v", got, want)
	}
	wantPath := os.Getenv("PATH")
	if os.Geteuid() == 0 {
		wantPath = strings.Join(seen.Search, ":")
	}
	if env["PATH"] != wantPath || env["LANG"] != "C.UTF-8" {
		t.Errorf("PATH=%q LANG=%q, want %q (forge's, what the candidate may search of it) and C.UTF-8", env["PATH"], env["LANG"], wantPath)
	}
}

func TestRunGetenvSuppliesPathAndLang(t *testing.T) {
	t.Parallel()
	forgeEnv := map[string]string{"PATH": "/usr/bin:/bin:relative/bin", "LANG": "C.UTF-8", "DAYTONA_API_KEY": "x"}
	r := newRunner(t, Options{Getenv: func(k string) string { return forgeEnv[k] }})
	job := runner.Job{
		RunID: newRunID(t), CandidateID: "sh", Trial: 1, Objective: "o",
		Command: []string{"sh", "-c", `env > "$2"`, "sh"}, // argv[0] found in the given PATH
	}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	lines := strings.Split(strings.TrimSpace(res.ArtifactContent), "\n")
	if !slices.Contains(lines, "PATH=/usr/bin:/bin:relative/bin") || !slices.Contains(lines, "LANG=C.UTF-8") {
		t.Errorf("env %q: want PATH and LANG from Getenv", lines)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "DAYTONA_") {
			t.Errorf("candidate got %s", l)
		}
	}
}

func TestRunObjectiveArrivesVerbatim(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	objective := "it's \"quoted\" $(touch PWNED) `touch PWNED2` $HOME ${PATH} \\n\nsecond line\ttab; echo no | cat é ✓ 'single'"
	job := pyJob(t, "verbatim", `
import json, os, sys
with open(sys.argv[2], "w") as f:
    json.dump({"argv": sys.argv[1:], "env": os.environ["FORGE_OBJECTIVE"], "ls": sorted(os.listdir("."))}, f)
`)
	job.Objective = objective
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	var got struct {
		Argv []string
		Env  string
		Ls   []string
	}
	if err := json.Unmarshal(res.Artifact, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Argv) != 2 || got.Argv[0] != objective || got.Env != objective {
		t.Errorf("argv[1:] %q, FORGE_OBJECTIVE %q; want the objective %q verbatim", got.Argv, got.Env, objective)
	}
	if slices.Contains(got.Ls, "PWNED") || slices.Contains(got.Ls, "PWNED2") {
		t.Errorf("the objective was run by a shell: working directory holds %v", got.Ls)
	}
}

func TestRunTracebackIsCandidateFailed(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "crash", "print('working')\nx = 1 / 0\n"))
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.ErrorMessage != "ZeroDivisionError: division by zero" {
		t.Errorf("error message %q", res.ErrorMessage)
	}
	if res.ExitCode == nil || *res.ExitCode != 1 || res.Output != "working\n" || !strings.Contains(res.Stderr, "Traceback") {
		t.Errorf("exit %v output %q stderr %q", res.ExitCode, res.Output, res.Stderr)
	}
}

func TestRunExitZeroWithoutArtifact(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "lazy", "print('nothing to write')\n"))
	assertKind(t, res, runner.ErrArtifactMissing)
	if res.ErrorMessage != "exited 0 but wrote no artifact at output.md" || res.ArtifactContent != "" {
		t.Errorf("message %q artifact %q", res.ErrorMessage, res.ArtifactContent)
	}
}

func TestRunArtifactOptional(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "noart", "print('fine')\n")
	job.ArtifactOptional = true
	assertKind(t, mustRun(t, r, job), runner.ErrNone)
}

func TestRunExitStatusWithoutStderr(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "quiet", "import sys\nsys.exit(3)\n"))
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.ErrorMessage != "exit status 3" || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Errorf("message %q exit %v", res.ErrorMessage, res.ExitCode)
	}
}

// runtime_seconds is the candidate's process only; job_seconds is the whole
// job, setup included. The setup's sleep is a workload, not a way to wait for
// something: only inequalities between measured durations are asserted.
func TestRunRuntimeIsTheCandidatesOwn(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "timed", "import sys, time\ntime.sleep(0.1)\nopen(sys.argv[2], 'w').write('ok')\n")
	job.Setup = []string{"sleep 0.3"}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.Phases.Setup < 0.3 {
		t.Errorf("setup phase %.3fs for a sleep 0.3", res.Phases.Setup)
	}
	if res.RuntimeSeconds < 0.1 || res.RuntimeSeconds > res.Phases.Execute {
		t.Errorf("runtime %.3fs: want at least the candidate's 0.1s sleep and at most the execute phase %.3fs",
			res.RuntimeSeconds, res.Phases.Execute)
	}
	if res.JobSeconds < res.RuntimeSeconds+res.Phases.Setup {
		t.Errorf("job %.3fs < runtime %.3fs + setup %.3fs", res.JobSeconds, res.RuntimeSeconds, res.Phases.Setup)
	}
}

func TestRunCommandNotFound(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "nointerp", "print('never')\n")
	job.Command[0] = "no-such-interpreter-9f8e"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.ErrorMessage != "no-such-interpreter-9f8e: executable file not found in $PATH" {
		t.Errorf("message %q", res.ErrorMessage)
	}
}

func TestRunUnusableTempDirIsAnError(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(localtest.TempDir(t), "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, Options{TempDir: dir})
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	res, err := run(t, context.Background(), r, pyJob(t, "nowhere", "print(1)\n"))
	var ue *runner.UnusableError
	if !errors.As(err, &ue) || ue.Kind != runner.ErrInfra {
		t.Fatalf("Run error %v, want an UnusableError of kind infra", err)
	}
	if res.ErrorKind != runner.ErrInfra || res.Backend != "local" {
		t.Errorf("result kind %q backend %q", res.ErrorKind, res.Backend)
	}
}

func TestRunRemovesReadOnlyWorkdir(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "readonly", `
import os, sys
os.makedirs("deep/er")
open("deep/er/file", "w").write("x")
open(sys.argv[2], "w").write(os.getcwd())
for d in ["deep/er", "deep", "tmp", "."]:
    os.chmod(d, 0o500)
os.chmod("deep/er/file", 0o400)
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	r.Close()
	if _, err := os.Stat(res.ArtifactContent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working directory %q still there: %v", res.ArtifactContent, err)
	}
}

// TestCloseWaitsForRemovals: the working directories of finished jobs may
// be removed after Run returns, but never after Close does (thousands of
// files take long enough to remove that a Close that did not wait fails).
func TestCloseWaitsForRemovals(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "many", `
import os, sys
for i in range(3000):
    open("f%d" % i, "w").close()
open(sys.argv[2], "w").write(os.getcwd())
`)
	var dirs []string
	for i := range backgroundRemovers {
		job.Trial = i + 1
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		dirs = append(dirs, res.ArtifactContent)
	}
	r.Close()
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("working directory %q still there after Close: %v", d, err)
		}
	}
}

// TestCloseWhileRunning: Close may be called while jobs run and finish
// (their removals start meanwhile); after the last Close nothing is left.
func TestCloseWhileRunning(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3 {
				res := mustRun(t, r, runner.Job{
					RunID: newRunID(t), CandidateID: fmt.Sprintf("c%d", g), Trial: i + 1, Objective: "o",
					Command: []string{"/bin/sh", "-c", `echo done > "$2"`, "sh"},
				})
				assertKind(t, res, runner.ErrNone)
			}
		})
	}
	closes := make(chan struct{})
	go func() {
		defer close(closes)
		for range 50 {
			r.Close()
		}
	}()
	wg.Wait()
	<-closes
	r.Close()
	if left := leftovers(t, r.opts.TempDir); len(left) != 0 {
		t.Errorf("left %v after the last Close", left)
	}
}

func TestRunAlreadyCancelledStartsNothing(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	marker := filepath.Join(localtest.SharedDir(t), "ran")
	job := pyJob(t, "late", "import os\nopen(os.environ['MARKER'], 'w').write('ran')\n")
	job.Env = map[string]string{"MARKER": marker}
	res, err := run(t, ctx, r, job)
	if err != nil {
		t.Fatal(err)
	}
	assertKind(t, res, runner.ErrCancelled)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Error("the candidate ran although the run was already cancelled")
	}
}

func TestRunConcurrentJobsStayApart(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	const n = 6
	var wg sync.WaitGroup
	results := make([]runner.Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := pyJob(t, fmt.Sprintf("c%d", i), `
import os, sys, subprocess
subprocess.Popen(["sleep", "600"])   # left behind on purpose
open(sys.argv[2], "w").write(os.environ["FORGE_CANDIDATE_ID"] + " " + os.getcwd())
`)
			res, err := r.Run(context.Background(), job)
			if err != nil {
				t.Errorf("job %d: %v", i, err)
			}
			assertNoSurvivors(t, job.RunID)
			results[i] = res
		}()
	}
	wg.Wait()
	dirs := map[string]bool{}
	for i, res := range results {
		assertKind(t, res, runner.ErrNone)
		id, dir, _ := strings.Cut(res.ArtifactContent, " ")
		if id != fmt.Sprintf("c%d", i) || dirs[dir] {
			t.Errorf("job %d: artifact %q (shared working directory?)", i, res.ArtifactContent)
		}
		dirs[dir] = true
	}
}

// daemonScript double-forks a setsid daemon that keeps stdout open, writes
// "alive" into the fifo $DAEMON_FIFO and stays; the candidate waits for it
// and then finishes normally.
const daemonScript = `
import os, sys, time
fifo = os.environ["DAEMON_FIFO"]
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    fd = os.open(fifo, os.O_WRONLY)
    os.write(fd, b"alive\n")
    print("daemon running", flush=True)
    os.write(w, b"x")
    while True:
        time.sleep(60)
os.read(r, 1)          # the daemon is up
with open(sys.argv[2], "w") as f:
    f.write("done")
if os.environ.get("READY_FIFO"):
    with open(os.environ["READY_FIFO"], "w") as f:
        f.write("ready\n")
    time.sleep(600)
`
