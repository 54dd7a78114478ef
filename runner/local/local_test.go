//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
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
	job := pyJob(t, "envdump", `
import json, os, sys
with open(sys.argv[2], "w") as f:
    json.dump(dict(os.environ), f)
`)
	job.Env = map[string]string{"MODE": "fast"}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	var env map[string]string
	if err := json.Unmarshal(res.Artifact, &env); err != nil {
		t.Fatalf("artifact %q: %v", res.Artifact, err)
	}
	if strings.Contains(string(res.Artifact), "secret") {
		t.Errorf("a secret of forge's environment reached the candidate: %s", res.Artifact)
	}
	want := []string{"FORGE_CANDIDATE_ID", "FORGE_OBJECTIVE", "FORGE_OUTPUT", "FORGE_RESULT", "FORGE_RUN_ID",
		"FORGE_TRANSCRIPT", "FORGE_TRIAL", "HOME", "LANG", "MODE", "PATH", "PYTHONUNBUFFERED", "TMPDIR"}
	if got := slices.Sorted(maps.Keys(env)); !slices.Equal(got, want) {
		t.Errorf("candidate environment has %v, want exactly %v", got, want)
	}
	if env["PATH"] != os.Getenv("PATH") || env["LANG"] != "C.UTF-8" {
		t.Errorf("PATH=%q LANG=%q, want forge's PATH and C.UTF-8", env["PATH"], env["LANG"])
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

func TestRunArtifactSymlinkIsRefused(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "sneaky", `
import os, sys
os.symlink("/etc/passwd", sys.argv[2])
os.symlink("/etc/passwd", os.environ["FORGE_RESULT"])
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrArtifactMissing)
	if res.ErrorMessage != "artifact output.md is a symlink; refused" {
		t.Errorf("message %q", res.ErrorMessage)
	}
	if !strings.Contains(res.SubmitError, "symlink") || res.Submitted != nil {
		t.Errorf("submit error %q, submitted %v: want the FORGE_RESULT symlink refused", res.SubmitError, res.Submitted)
	}
	b, _ := json.Marshal(res)
	if res.ArtifactContent != "" || len(res.Artifact) != 0 || bytes.Contains(b, []byte("root:")) {
		t.Errorf("content of /etc/passwd was read: %s", b)
	}
}

func TestRunArtifactEscapingThroughSymlinkedDirIsRefused(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	outside := t.TempDir()
	job := pyJob(t, "escape", `
import os, sys
os.symlink(os.environ["OUTSIDE"], "out")
with open(sys.argv[2], "w") as f:   # out/result.md, which is really outside
    f.write("SECRET-OUTSIDE")
`)
	job.OutputFile = "out/result.md"
	job.Env = map[string]string{"OUTSIDE": outside}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrArtifactMissing)
	if !strings.HasPrefix(res.ErrorMessage, "artifact out/result.md ") || !strings.HasSuffix(res.ErrorMessage, "; refused") {
		t.Errorf("message %q", res.ErrorMessage)
	}
	if res.ArtifactContent != "" || len(res.Artifact) != 0 {
		t.Errorf("read %q from outside the working directory", res.ArtifactContent)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "result.md")); err != nil || string(b) != "SECRET-OUTSIDE" {
		t.Errorf("the candidate did not write outside as planned (%q, %v): the test proves nothing", b, err)
	}
}

func TestRunArtifactInsideSymlinkedDirIsRead(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "insidelink", `
import os, sys
os.mkdir("real")
os.symlink("real", "out")
with open(sys.argv[2], "w") as f:
    f.write("inside")
`)
	job.OutputFile = "out/result.md"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "inside" {
		t.Errorf("artifact %q", res.ArtifactContent)
	}
}

func TestRunArtifactFifoIsRefusedWithoutHanging(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "fifo", "import os, sys\nos.mkfifo(sys.argv[2])\n"))
	assertKind(t, res, runner.ErrArtifactMissing)
	if res.ErrorMessage != "artifact output.md is not a regular file but a named pipe; refused" {
		t.Errorf("message %q", res.ErrorMessage)
	}
}

func TestRunBinaryOutputStaysValidJSON(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "binary", `
import sys
sys.stdout.buffer.write(b"ok \xff\xfe\x80 bad utf-8\n")
sys.stderr.buffer.write(b"\xc3\x28 also bad\n")
with open(sys.argv[2], "wb") as f:
    f.write(bytes(range(256)))
`))
	assertKind(t, res, runner.ErrNone)
	b, err := json.Marshal(res)
	if err != nil || !json.Valid(b) {
		t.Fatalf("json.Marshal: %v; valid %v: %s", err, json.Valid(b), b)
	}
	want := make([]byte, 256)
	for i := range want {
		want[i] = byte(i)
	}
	if res.ArtifactEncoding != "base64" || res.ArtifactBytes != 256 {
		t.Errorf("encoding %q bytes %d", res.ArtifactEncoding, res.ArtifactBytes)
	}
	var back runner.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := base64.StdEncoding.DecodeString(back.ArtifactContent)
	if err != nil || !bytes.Equal(got, want) || !bytes.Equal(res.Artifact, want) {
		t.Errorf("artifact did not round-trip: %v %x", err, got)
	}
	if !strings.HasPrefix(back.Output, "ok ") || !strings.HasSuffix(back.Output, " bad utf-8\n") {
		t.Errorf("output after JSON %q", back.Output)
	}
}

func TestRunHugeOutputIsCapped(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "firehose", `
import sys
chunk = b"x" * (1 << 20)
w = sys.stdout.buffer
for _ in range(1024):          # 1 GiB
    w.write(chunk)
w.flush()
sys.stderr.write("e" * (3 << 20))
sys.stderr.flush()
with open(sys.argv[2], "w") as f:
    f.write("survived")
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if !res.OutputTruncated || len(res.Output) != runner.DefaultMaxOutput || len(res.Stderr) != runner.DefaultMaxOutput {
		t.Errorf("truncated %v, kept %d bytes of stdout and %d of stderr; want both capped at %d",
			res.OutputTruncated, len(res.Output), len(res.Stderr), runner.DefaultMaxOutput)
	}
	if strings.Trim(res.Output, "x") != "" || res.ArtifactContent != "survived" {
		t.Errorf("unexpected output content or artifact %q", res.ArtifactContent)
	}
}

func TestRunOutputCapIsConfigurable(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "small", "import sys\nprint('a' * 100)\nopen(sys.argv[2], 'w').write('b' * 100)\n")
	job.Limits = runner.Limits{MaxOutputBytes: 10, MaxArtifactBytes: 7}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.Output != strings.Repeat("a", 10) || !res.OutputTruncated {
		t.Errorf("output %q truncated %v", res.Output, res.OutputTruncated)
	}
	if res.ArtifactContent != "bbbbbbb" || !res.ArtifactTruncated || res.ArtifactBytes != 100 {
		t.Errorf("artifact %q truncated %v bytes %d", res.ArtifactContent, res.ArtifactTruncated, res.ArtifactBytes)
	}
}

func TestRunBadSubmissionIsNotAFailure(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "badsubmit", `
import os, sys
open(os.environ["FORGE_RESULT"], "w").write("[1, 2]")
open(sys.argv[2], "w").write("ok")
`))
	assertKind(t, res, runner.ErrNone)
	if !strings.Contains(res.SubmitError, "not a JSON object") || res.Submitted != nil {
		t.Errorf("submit error %q submitted %v", res.SubmitError, res.Submitted)
	}
}

func TestRunSetupFailureSkipsCandidate(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	marker := filepath.Join(t.TempDir(), "candidate-ran")
	job := pyJob(t, "needsdeps", "import os\nopen(os.environ['MARKER'], 'w').write('ran')\n")
	job.Env = map[string]string{"MARKER": marker}
	job.Setup = []string{"echo preparing", "echo 'ERROR: No matching distribution found for nosuchpkg' >&2; exit 3", "touch \"$MARKER\""}
	var phases []runner.Phase
	job.Progress = func(p runner.Phase) { phases = append(phases, p) }
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.ErrorMessage != "setup failed: ERROR: No matching distribution found for nosuchpkg" {
		t.Errorf("message %q", res.ErrorMessage)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the candidate or a later setup line ran after a failing setup (stat %v)", err)
	}
	if slices.Contains(phases, runner.PhaseExecute) || !slices.Contains(phases, runner.PhaseSetup) {
		t.Errorf("phases %v", phases)
	}
	assertNoSurvivors(t, job.RunID)
}

func TestRunSetupPreparesTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "prepared", "import sys\nopen(sys.argv[2], 'w').write(open('setup.txt').read())\n")
	job.Setup = []string{`echo "from setup" > setup.txt`, `echo "$FORGE_CANDIDATE_ID $HOME" >> setup.txt`}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	lines := strings.Split(strings.TrimSpace(res.ArtifactContent), "\n")
	if len(lines) != 2 || lines[0] != "from setup" || !strings.HasPrefix(lines[1], "prepared "+r.opts.TempDir) {
		t.Errorf("artifact %q", res.ArtifactContent)
	}
	if res.Phases.Setup <= 0 {
		t.Errorf("setup phase %v", res.Phases.Setup)
	}
}

func TestRunSetupTimeout(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{KillGrace: 200 * time.Millisecond})
	job := pyJob(t, "slowsetup", "print('never')\n")
	job.Setup = []string{"echo waiting >&2; exec sleep 600"}
	job.SetupTimeout = 300 * time.Millisecond
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.ErrorMessage != "setup failed: timed out after 300ms: waiting" {
		t.Errorf("message %q", res.ErrorMessage)
	}
	assertNoSurvivors(t, job.RunID)
}

// The setup timeout bounds all the setup lines together (as on Daytona,
// where they are one script): two lines that each fit in it, but not both,
// time out.
func TestRunSetupTimeoutIsForAllLines(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{KillGrace: 200 * time.Millisecond})
	job := pyJob(t, "twolines", "print('never')\n")
	// Each line alone fits in the timeout; a timeout per line would let
	// both pass and the candidate run.
	job.Setup = []string{"sleep 1", "echo second >&2; sleep 1"}
	job.SetupTimeout = 1500 * time.Millisecond
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.ErrorMessage != "setup failed: timed out after 1.5s: second" {
		t.Errorf("message %q", res.ErrorMessage)
	}
	assertNoSurvivors(t, job.RunID)
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

// A setup line that fails without a word is named by its exit status, as
// in runner/daytona's TestSetup.
func TestRunSetupSilentFailure(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "silentsetup", "print('never')\n")
	job.Setup = []string{"exit 4"}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.ErrorMessage != "setup failed: exit status 4" || res.ExitCode != nil {
		t.Errorf("message %q, exit code %v", res.ErrorMessage, res.ExitCode)
	}
}

func TestRunUploadRefusesEscapingDestinations(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	for _, dst := range []string{"../evil.py", "/tmp/evil.py", "a/../../evil.py", "a/..", ""} {
		job := pyJob(t, "upload", "print('never')\n")
		job.Files = append(job.Files, runner.File{Src: job.Files[0].Src, Dst: dst})
		res, err := run(t, context.Background(), r, job)
		if err != nil {
			t.Errorf("Dst %q: Run returned error %v; want an infra result only", dst, err)
		}
		if res.ErrorKind != runner.ErrInfra || !strings.Contains(res.ErrorMessage, "destination") {
			t.Errorf("Dst %q: kind %q message %q", dst, res.ErrorKind, res.ErrorMessage)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(r.opts.TempDir), "evil.py")); err == nil {
		t.Error("a file was written outside the temp dir")
	}
	r.Close()
	if left := leftovers(t, r.opts.TempDir); len(left) != 0 {
		t.Errorf("Run left %v behind", left)
	}
}

// TestRunOutputFileIsCleaned: out/../x.md names x.md inside the working
// directory (runner.RelPath), so the candidate writes there and forge reads
// it back.
func TestRunOutputFileIsCleaned(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "dotdotout", `
import os, sys
assert sys.argv[2] == os.environ["FORGE_OUTPUT"], (sys.argv[2], os.environ["FORGE_OUTPUT"])
assert os.path.basename(sys.argv[2]) == "x.md" and "/out/" not in sys.argv[2], sys.argv[2]
with open(sys.argv[2], "w") as f:
    f.write("cleaned")
`)
	job.OutputFile = "out/../x.md"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "cleaned" {
		t.Errorf("artifact %q", res.ArtifactContent)
	}
}

func TestRunRefusesEscapingOutputFile(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "outfile", "print('never')\n")
	job.OutputFile = "../../etc/passwd"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrInfra)
}

func TestRunKeepsExecutableBit(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	dir := t.TempDir()
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s' \"$1\" > \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(data, []byte("d"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := runner.Job{
		RunID: newRunID(t), CandidateID: "exe", Trial: 1, Objective: "hello",
		Command: []string{"bin/run.sh"},
		Files:   []runner.File{{Src: script, Dst: "bin/run.sh"}, {Src: data, Dst: "data.txt"}},
	}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "hello" {
		t.Errorf("artifact %q", res.ArtifactContent)
	}

	job.Command = []string{"./data.txt"} // copied without the executable bit
	res = mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if !strings.Contains(res.ErrorMessage, "not executable") {
		t.Errorf("message %q", res.ErrorMessage)
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
	dir := filepath.Join(t.TempDir(), "work")
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
	marker := filepath.Join(t.TempDir(), "ran")
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

// openDaemonFifo makes the fifo a daemon writes to, opened for reading
// before the daemon starts so its open does not block.
func openDaemonFifo(t *testing.T) (string, *os.File) {
	t.Helper()
	p := mkfifo(t, "daemon.fifo")
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return p, f
}

// assertDaemonGone reads the daemon's fifo: "alive" proves it existed, EOF
// proves nothing holds the fifo any more, i.e. the daemon is dead.
func assertDaemonGone(t *testing.T, f *os.File) {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the daemon still holds its fifo open after Run returned (read %q)", b)
	}
	if err != nil || string(b) != "alive\n" {
		t.Fatalf("fifo read %q, %v: want \"alive\\n\" then EOF (did the daemon run at all?)", b, err)
	}
}

func TestRunLeavesNoDaemon(t *testing.T) {
	eachTier(t, Options{}, func(t *testing.T, r *Runner) {
		fifo, f := openDaemonFifo(t)
		job := pyJob(t, "daemon", daemonScript)
		job.Env = map[string]string{"DAEMON_FIFO": fifo}
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		if !strings.Contains(res.Output, "daemon running") {
			t.Errorf("output %q: the daemon should have held stdout", res.Output)
		}
		assertDaemonGone(t, f)
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunCancelledMidRun(t *testing.T) {
	eachTier(t, Options{KillGrace: 5 * time.Second}, func(t *testing.T, r *Runner) {
		fifo, f := openDaemonFifo(t)
		ready, br, rf := readyFifo(t)
		job := pyJob(t, "cancelme", daemonScript)
		job.Env = map[string]string{"DAEMON_FIFO": fifo, "READY_FIFO": ready}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// Cancel once the candidate says it is ready (or never, if it
			// does not, and the Run deadline fails the test).
			if err := rf.SetReadDeadline(time.Now().Add(runDeadline)); err == nil {
				if line, err := br.ReadString('\n'); err == nil && strings.TrimSpace(line) == "ready" {
					cancel()
				}
			}
		}()
		res, err := run(t, ctx, r, job)
		if err != nil {
			t.Fatal(err)
		}
		assertKind(t, res, runner.ErrCancelled)
		if res.ExitCode != nil {
			t.Errorf("exit code %d for a candidate ended by SIGTERM", *res.ExitCode)
		}
		assertDaemonGone(t, f)
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunTimeoutKillsWhatIgnoresSIGTERM(t *testing.T) {
	eachTier(t, Options{KillGrace: 300 * time.Millisecond}, func(t *testing.T, r *Runner) {
		job := pyJob(t, "stubborn", `
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('child up', flush=True)\ntime.sleep(600)"],
    stdout=subprocess.PIPE)
child.stdout.readline()
print("ready", flush=True)
time.sleep(600)
`)
		job.Timeout = 5 * time.Second
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrTimeout)
		if res.ErrorMessage != "timed out after 5s" || res.ExitCode != nil {
			t.Errorf("message %q exit %v", res.ErrorMessage, res.ExitCode)
		}
		// A timed-out candidate ran for its timeout (as on Daytona); the
		// job also waited out the grace period.
		if res.RuntimeSeconds != 5 || res.JobSeconds < res.RuntimeSeconds {
			t.Errorf("runtime %.3fs, job %.3fs; want 5s and at least that", res.RuntimeSeconds, res.JobSeconds)
		}
		if res.Output != "ready\n" {
			t.Fatalf("output %q: the candidate did not get to start its child within the timeout, the test proves nothing", res.Output)
		}
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunTimeoutSendsSIGTERMToEveryProcess(t *testing.T) {
	// A long grace: SIGTERM, not the SIGKILL after it, must end them.
	eachTier(t, Options{KillGrace: 60 * time.Second}, func(t *testing.T, r *Runner) {
		job := pyJob(t, "polite", `
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", """
import os, signal, sys, time
def term(*_):
    print("child got SIGTERM", file=sys.stderr, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
os.setsid()   # out of the candidate's process group
print("child up", flush=True)
time.sleep(600)
"""], stdout=subprocess.PIPE)
child.stdout.readline()
def term(*_):
    child.wait()
    print("parent got SIGTERM", file=sys.stderr, flush=True)
    sys.exit(7)
signal.signal(signal.SIGTERM, term)
print("ready", flush=True)
time.sleep(600)
`)
		job.Timeout = 5 * time.Second
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrTimeout)
		if res.Output != "ready\n" {
			t.Fatalf("output %q: the candidate was not ready within the timeout, the test proves nothing", res.Output)
		}
		if !strings.Contains(res.Stderr, "child got SIGTERM") || !strings.Contains(res.Stderr, "parent got SIGTERM") {
			t.Errorf("stderr %q: want both processes to have got SIGTERM", res.Stderr)
		}
		if res.ExitCode == nil || *res.ExitCode != 7 {
			t.Errorf("exit code %v, want the candidate's own 7", res.ExitCode)
		}
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunPidsLimit(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{MaxProcs: 16})
	if r.PidsLimit() == 0 {
		missingTier(t, ContainPIDNamespace, "no pids limit: "+r.Describe())
	}
	job := pyJob(t, "spawner", `
import subprocess, sys
procs = []
err = ""
for i in range(40):
    try:
        procs.append(subprocess.Popen(["sleep", "600"]))
    except OSError as e:
        err = str(e)
        break
open(sys.argv[2], "w").write("%d %s" % (len(procs), err))
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	var n int
	var msg string
	fmt.Sscanf(res.ArtifactContent, "%d %s", &n, &msg)
	if n == 0 || n >= 16 || msg == "" {
		t.Errorf("candidate started %d processes before failing (%q); want some, fewer than the limit of 16", n, res.ArtifactContent)
	}
	assertNoSurvivors(t, job.RunID)
}

func TestRunForkBombIsContained(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{MaxProcs: 64, KillGrace: 200 * time.Millisecond})
	if r.PidsLimit() == 0 {
		// Without a cap a fork bomb would take the machine down.
		missingTier(t, ContainPIDNamespace, "no pids limit, no fork bomb: "+r.Describe())
	}
	dir := t.TempDir()
	// The bomb goes off in a subshell while the script itself becomes a
	// sleep (exec: no fork), so it outlives the limit it hits and times out
	// rather than failing when its own next fork is refused.
	bomb := filepath.Join(dir, "bomb.sh")
	if err := os.WriteFile(bomb, []byte("bomb() { bomb | bomb & }\n( bomb ) &\nexec sleep 600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := runner.Job{
		RunID: newRunID(t), CandidateID: "bomb", Trial: 1, Objective: "o",
		Command: []string{"/bin/sh", "bomb.sh"},
		Files:   []runner.File{{Src: bomb, Dst: "bomb.sh"}},
		Timeout: 2 * time.Second,
	}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrTimeout)
	if !strings.Contains(strings.ToLower(res.Stderr), "fork") {
		t.Errorf("stderr %.300q: want the shell's fork failures, proof that the limit held", res.Stderr)
	}
	assertNoSurvivors(t, job.RunID)
}

func TestNewReportsContainment(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	t.Logf("containment here: %s", r.Describe())
	if !strings.HasPrefix(r.Describe(), string(r.Containment())+":") {
		t.Errorf("Describe %q does not start with the tier %q", r.Describe(), r.Containment())
	}
	if r.Containment() != ContainPIDNamespace && mustOffer(ContainPIDNamespace) {
		t.Errorf("Linux as root, yet the strongest tier is %s (set %s if this machine cannot have PID namespaces)", r.Describe(), bestEffort)
	}
}

// TestRunLeavesForgeThreadsClean: the threads that started jobs' processes
// in their PID namespace and pids cgroup must be back in forge's own, or
// forge's later children would start in a dead namespace (or a job's cgroup).
func TestRunLeavesForgeThreadsClean(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	for i := range 4 {
		job := pyJob(t, fmt.Sprintf("t%d", i), "import sys\nopen(sys.argv[2], 'w').write('x')\n")
		job.Setup = []string{"true"}
		assertKind(t, mustRun(t, r, job), runner.ErrNone)
	}
	// forge's own namespace and cgroups, read from an ordinary thread:
	// /proc/self names the main thread, which may be one starting a job's
	// process in another test at this very moment.
	runtime.LockOSThread()
	ownNS, err := os.Readlink("/proc/thread-self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	ownCgroup, err := os.ReadFile("/proc/thread-self/cgroup")
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("sh", "-c", "readlink /proc/self/ns/pid; cat /proc/self/cgroup").Output()
			if err != nil {
				t.Errorf("an ordinary child of forge failed to start or run: %v", err)
				return
			}
			ns, cg, _ := strings.Cut(string(out), "\n")
			if ns != ownNS || cg != string(ownCgroup) {
				t.Errorf("an ordinary child of forge is in PID namespace %s, cgroups\n%s\nwant %s,\n%s", ns, cg, ownNS, ownCgroup)
			}
		}()
	}
	wg.Wait()
}

// TestMain doubles as the forge process of TestRunForgeKilledLeavesNothing:
// with LOCAL_TEST_HELPER_JOB set, the test binary runs that one job and
// waits to be killed; and of TestBuildEnvironmentAcrossProcesses: with
// LOCAL_TEST_HELPER_BUILD set, it builds that environment (helperBuild).
func TestMain(m *testing.M) {
	if spec := os.Getenv("LOCAL_TEST_HELPER_JOB"); spec != "" {
		os.Exit(helperForge(spec))
	}
	if spec := os.Getenv("LOCAL_TEST_HELPER_BUILD"); spec != "" {
		os.Exit(helperBuild(spec))
	}
	os.Exit(m.Run())
}

func helperForge(spec string) int {
	var job runner.Job
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := New(Options{TempDir: os.Getenv("LOCAL_TEST_HELPER_TMP"), Containment: ContainPIDNamespace})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r.Run(context.Background(), job)
	fmt.Fprintln(os.Stderr, "Run returned; it should have been killed first")
	return 1
}

func TestRunForgeKilledLeavesNothing(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{TempDir: t.TempDir(), Containment: ContainPIDNamespace}); err != nil {
		missingTier(t, ContainPIDNamespace, fmt.Sprintf("only the pidns tier survives forge's death: %v", err))
	}
	fifo, f := openDaemonFifo(t)
	ready, br, rf := readyFifo(t)
	job := pyJob(t, "orphaned", daemonScript)
	job.Env = map[string]string{"DAEMON_FIFO": fifo, "READY_FIFO": ready}
	spec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	forge := exec.Command(os.Args[0])
	forge.Env = append(os.Environ(), "LOCAL_TEST_HELPER_JOB="+string(spec), "LOCAL_TEST_HELPER_TMP="+tmp)
	forge.Stdout, forge.Stderr = os.Stderr, os.Stderr
	if err := forge.Start(); err != nil {
		t.Fatal(err)
	}
	if line := waitLine(t, rf, br, 60*time.Second); line != "ready" {
		t.Fatalf("candidate said %q", line)
	}
	if err := forge.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	forge.Wait()
	// forge is gone without cleaning up; the namespace's init sees EOF and
	// the kernel ends the rest.
	assertDaemonGone(t, f)
	deadline := time.Now().Add(10 * time.Second)
	for len(localtest.Survivors(job.RunID)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assertNoSurvivors(t, job.RunID)
}
