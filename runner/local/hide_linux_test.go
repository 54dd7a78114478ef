package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// snoop is a job's (and its verifier's) look at what is not its own: each
// line "<what>: seen" or "<what>: hidden".
const snoop = `look() { what=$1; shift; if "$@" >/dev/null 2>&1; then echo "$what: seen"; else echo "$what: hidden"; fi; }
look env cat "$M/.env"
look git git -C "$M" show HEAD:checks/answer.txt
look artifact cat "$O/bravo/artifact.txt"
look host-process test -e "/proc/$HOST_PID"
look mountinfo-manifest grep -qF "$M" /proc/self/mountinfo
look mountinfo-output grep -qF "$O" /proc/self/mountinfo
look own-process test -e /proc/self/status
`

// hiddenWorld is a manifest directory (a git repository with a committed
// answer and a .env) and an output root with another candidate's artifact,
// in directories of their own.
func hiddenWorld(t *testing.T) (manifest, out string) {
	t.Helper()
	manifest, out = localtest.TempDir(t), localtest.TempDir(t)
	for name, data := range map[string]string{
		filepath.Join(manifest, ".env"):                 "SECRET=hunter2\n",
		filepath.Join(manifest, "checks", "answer.txt"): "42\n",
		filepath.Join(out, "bravo", "artifact.txt"):     "bravo's\n",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"}} {
		if b, err := exec.Command("git", append([]string{"-C", manifest}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, b)
		}
	}
	// Readable by every user, as a checkout often is: only the mounts hide it.
	if err := exec.Command("chmod", "-R", "a+rX", manifest, out).Run(); err != nil {
		t.Fatal(err)
	}
	return manifest, out
}

// TestJobSeesItsOwnThings: on every tier that can mount, with the manifest
// directory and output root hidden, neither a candidate nor its verifier
// reads the manifest's .env, its git history or another candidate's
// artifact, sees a host process in /proc, or finds either path in its
// mountinfo; each still runs in its own directory and the verifier reads
// its tests.
func TestJobSeesItsOwnThings(t *testing.T) {
	manifest, out := hiddenWorld(t)
	eachTier(t, Options{Hide: []string{manifest, out}}, func(t *testing.T, r *Runner) {
		needReadOnly(t, r)
		// git refuses a repository another user owns: the job's is not root.
		env := "M=" + strconv.Quote(manifest) + " O=" + strconv.Quote(out) + " HOST_PID=" + strconv.Itoa(os.Getpid()) + " GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'"
		job := runner.Job{
			RunID: newRunID(t), CandidateID: "alpha", Trial: 1, Objective: "o",
			Command: []string{"sh", "-c", env + " sh snoop.sh > \"$FORGE_OUTPUT\""},
			Files:   []runner.File{{Data: []byte(snoop), Dst: "snoop.sh"}},
			Timeout: 60 * time.Second,
			Hidden:  []string{filepath.Join(manifest, "checks")},
			Verify: &runner.Verify{
				Files:   []runner.File{{Data: []byte("1\n"), Dst: "reward.txt"}},
				Command: env + ` sh snoop.sh; cp "$FORGE_TESTS_DIR/reward.txt" "$FORGE_VERIFIER_LOGS/reward.txt"`,
			},
		}
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		for who, got := range map[string]string{"candidate": res.ArtifactContent, "verifier": res.VerifierOutput} {
			for _, what := range []string{"env", "git", "artifact", "host-process", "mountinfo-manifest", "mountinfo-output"} {
				if !strings.Contains(got, what+": hidden\n") {
					t.Errorf("the %s: %s not hidden:\n%s", who, what, got)
				}
			}
			if !strings.Contains(got, "own-process: seen\n") {
				t.Errorf("the %s does not see itself in /proc:\n%s", who, got)
			}
		}
		if res.Reward == nil || *res.Reward != 1 {
			t.Errorf("reward %v: the verifier did not read its tests (log %q)", res.Reward, res.VerifierOutput)
		}
		if m := hostMounts(t, manifest); len(m) != 0 {
			t.Errorf("mounts left in forge's namespace: %q", m)
		}
	})
}

// TestJobsDirGoesWithTheRunner: the directory the jobs' own directories
// went in, made to bind back under the covers, is gone once the runner
// is closed: a run leaves nothing in the temp dir.
func TestJobsDirGoesWithTheRunner(t *testing.T) {
	manifest, out := hiddenWorld(t)
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Hide: []string{manifest, out}, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	needReadOnly(t, r)
	if r.jobsDir == tmp {
		r.Close()
		t.Skip("nothing hidden here: no directory of the jobs")
	}
	mustRun(t, r, runner.Job{RunID: newRunID(t), CandidateID: "a", Trial: 1, Objective: "o",
		Command: []string{"sh", "-c", "echo hi > \"$FORGE_OUTPUT\""}, Timeout: 30 * time.Second})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temp dir after Close: %v", left)
	}
}
