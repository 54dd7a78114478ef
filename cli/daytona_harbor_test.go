package cli_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// copyHarbor copies examples/harbor into a fresh directory.
func copyHarbor(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", "harbor"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The sample Harbor benchmark through the CLI on the emulator: 2 agents ×
// 6 tasks × 3 trials, one snapshot per task image built once, every trial
// judged by its task's verifier in its own sandbox (partial credit
// included); then the oracle solves 6 of 6.
func TestDaytonaPlaysTheHarborSample(t *testing.T) {
	t.Parallel()
	srv := harborEmulator(t)
	dir := copyHarbor(t)
	rec, stdout, _ := playDaytona(t, srv, dir, 0, "h1")
	if len(rec.Results) != 36 || len(rec.Environments) != 6 {
		t.Fatalf("%d results, %d environments; want 36 and 6\n%s", len(rec.Results), len(rec.Environments), stdout)
	}
	if n := srv.Calls(daytonatest.OpCreateSnapshot); n != 6 {
		t.Errorf("%d snapshots created for 6 task images", n)
	}
	rewards := map[string]float64{}
	for _, r := range rec.Results {
		if r.Reward == nil || r.ErrorKind != runner.ErrNone || r.Phases.Verify <= 0 {
			t.Errorf("%s/%s#%d: %s %q reward %v; verifier: %s", r.CandidateID, r.TaskID, r.Trial, r.ErrorKind, r.ErrorMessage, r.Reward, r.VerifierOutput)
			continue
		}
		rewards[r.CandidateID+"/"+r.TaskID] += *r.Reward / 3
	}
	for _, task := range []string{"create-file", "csv-transform", "fix-bug", "git-state", "serve-port", "partial-credit"} {
		if rewards["steady/"+task] != 1 {
			t.Errorf("steady on %s: reward %v, want 1", task, rewards["steady/"+task])
		}
	}
	if r := rewards["hasty/partial-credit"]; r != 0.5 {
		t.Errorf("hasty's partial credit: %v, want 0.5", r)
	}
	// Six tasks are too few for the paired test to call a winner; the
	// standings still put steady first.
	if st := rec.Standings; len(st) != 2 || st[0].CandidateID != "steady" || !(st[0].Score > st[1].Score) {
		t.Errorf("standings %+v: %s", st, rec.WinnerLine)
	}
	checkEmulator(t, srv, srv.APIKey())

	// The oracle: each task's own solution, in the snapshots already built.
	rec, _, _ = playDaytona(t, srv, dir, 0, "o1", "--oracle")
	if len(rec.Results) != 6 || rec.Standings[0].Suite == nil || rec.Standings[0].Suite.Solved != 6 {
		t.Errorf("oracle: %d results, standings %+v", len(rec.Results), rec.Standings)
	}
	if n := srv.Calls(daytonatest.OpCreateSnapshot); n != 6 {
		t.Errorf("the oracle's run created snapshots again: %d in all", n)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A candidate that looks for the tests and the solution during its run
// finds nothing: not in its working directory, not at /tests, /logs or
// /solution, nowhere on its file system; the verifier then finds what it
// left.
func TestDaytonaHarborSnooperFindsNothing(t *testing.T) {
	t.Parallel()
	srv := harborEmulator(t)
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"forge.yaml": "harbor: tasks\ncandidates:\n  - id: snoop\n    script: snoop.sh\nscoring:\n  - type: verifier\n",
		"snoop.sh": `{ pwd; ls -a /tests /logs /solution 2>&1; find / -xdev \( -name 'test.sh' -o -name 'solve.sh' -o -name 'secret-answer*' \) 2>/dev/null; } > /app/snooped.txt
echo done > /app/done.txt
`,
		"tasks/peek/task.toml":              "version = \"1.0\"\n[verifier]\ntimeout_sec = 30.0\n",
		"tasks/peek/instruction.md":         "Write done into /app/done.txt.\n",
		"tasks/peek/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
		"tasks/peek/tests/test.sh": `mkdir -p /logs/verifier
echo "snooped:"; cat /app/snooped.txt
if grep -qx done /app/done.txt && ! grep -q 'secret-answer\|test.sh\|solve.sh' /app/snooped.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
`,
		"tasks/peek/tests/secret-answer.txt":   "42\n",
		"tasks/peek/solution/solve.sh":         "echo done > done.txt\n",
		"tasks/peek/solution/secret-answer.sh": "true\n",
	})
	rec, _, _ := playDaytona(t, srv, dir, 0, "s1", "--quiet")
	r := rec.Results[0]
	if r.Reward == nil || *r.Reward != 1 {
		t.Errorf("reward %v; the verifier saw:\n%s", r.Reward, r.VerifierOutput)
	}
	if !strings.Contains(r.VerifierOutput, "/app\n") {
		t.Errorf("the candidate did not start in the image's WORKDIR:\n%s", r.VerifierOutput)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A Harbor suite without scoring: ranks by its verifiers' reward: the fast
// candidate whose answer the verifier rejects (reward 0) is not first, as
// success and runtime would have it (issue 41).
func TestDaytonaHarborRanksByReward(t *testing.T) {
	t.Parallel()
	srv := harborEmulator(t)
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"forge.yaml":                          "harbor: tasks\ncandidates:\n  - id: hasty\n    script: hasty.sh\n  - id: steady\n    script: steady.sh\n",
		"hasty.sh":                            "echo 41 > /app/answer.txt\n",
		"steady.sh":                           "sleep 0.5; echo 42 > /app/answer.txt\n",
		"tasks/answer/task.toml":              "version = \"1.0\"\n",
		"tasks/answer/instruction.md":         "Write the answer into /app/answer.txt.\n",
		"tasks/answer/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
		"tasks/answer/tests/test.sh":          "mkdir -p /logs/verifier\nif grep -qx 42 /app/answer.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	})
	rec, stdout, _ := playDaytona(t, srv, dir, 0, "r1", "--quiet")
	if st := rec.Standings; len(st) != 2 || st[0].CandidateID != "steady" || st[0].Score != 1 || st[1].Score != 0 {
		t.Errorf("standings %+v, want steady first, 1 to 0:\n%s", st, stdout)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A task whose image fails to build makes that task unplayable, with the
// build's reason; the rest of the suite plays and the run says it is
// incomplete (exit 3), naming the Dockerfile to fix.
func TestDaytonaBrokenTaskImageFailsThatTaskAlone(t *testing.T) {
	t.Parallel()
	srv := harborEmulator(t)
	dir := t.TempDir()
	task := func(name, dockerfile string) map[string]string {
		return map[string]string{
			"tasks/" + name + "/task.toml":              "version = \"1.0\"\n",
			"tasks/" + name + "/instruction.md":         "Write ok into /app/ok.txt.\n",
			"tasks/" + name + "/environment/Dockerfile": dockerfile,
			"tasks/" + name + "/tests/test.sh":          "mkdir -p /logs/verifier; grep -qx ok /app/ok.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
		}
	}
	files := map[string]string{
		"forge.yaml": "harbor: tasks\ncandidates:\n  - id: a\n    script: a.sh\nscoring:\n  - type: verifier\n",
		"a.sh":       "echo ok > ok.txt\n",
	}
	maps.Copy(files, task("good", "FROM python:3.12-slim\nWORKDIR /app\n"))
	maps.Copy(files, task("bad", "FROM python:3.12-slim\nRUN echo the compiler is missing >&2; exit 7\nWORKDIR /app\n"))
	testfiles.Write(t, dir, files)
	rec, _, stderr := playDaytona(t, srv, dir, 3, "b1", "--quiet")
	seen := map[string]int{}
	for _, r := range rec.Results {
		seen[r.TaskID]++
		switch r.TaskID {
		case "good":
			if r.Reward == nil || *r.Reward != 1 {
				t.Errorf("good: %s %q reward %v", r.ErrorKind, r.ErrorMessage, r.Reward)
			}
		case "bad":
			if r.ErrorKind != runner.ErrInfra || !strings.Contains(r.ErrorMessage, "task bad's image") || !strings.Contains(r.ErrorMessage, "the compiler is missing") {
				t.Errorf("bad: %s %q", r.ErrorKind, r.ErrorMessage)
			}
		}
	}
	if seen["good"] != 1 || seen["bad"] != 1 {
		t.Errorf("results per task %v, want good and bad once each", seen)
	}
	// Once, on stderr: the builder's own reason and the file to fix; no
	// --resume, which would fail the same way.
	reason := `process "/bin/sh -c echo the compiler is missing >&2; exit 7" did not complete successfully: exit code: 7`
	if n := strings.Count(stderr, reason); n != 1 || !strings.Contains(stderr, "forge: no verdict: task bad's image: ") ||
		!strings.Contains(stderr, "fix tasks/bad/environment/Dockerfile") || strings.Contains(stderr, "--resume") {
		t.Errorf("stderr says the reason %d times, or not the file to fix, or advises --resume:\n%s", n, stderr)
	}
	for _, r := range rec.Results {
		if n := strings.Count(r.ErrorMessage, "exit code: 7"); r.TaskID == "bad" && n != 1 {
			t.Errorf("bad's message says the reason %d times: %q", n, r.ErrorMessage)
		}
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A task whose image runs as a user who cannot write where forge puts the
// job's files (USER nobody, home /nonexistent): the daemon runs as that
// user, so its toolbox refuses the upload. The first trial fails once,
// saying why, with no attempt that would fail the same way; the task's
// other trials fail at once, no sandbox made, as a broken image's do; the
// rest of the suite plays, and forge names the file to fix, not --resume.
func TestDaytonaTaskImageUserCannotWrite(t *testing.T) {
	t.Parallel()
	srv, dir := harborTasks(t, map[string]string{
		"tasks/good/task.toml":                "version = \"1.0\"\n",
		"tasks/good/instruction.md":           "Nothing to do.\n",
		"tasks/good/environment/Dockerfile":   "FROM python:3.12-slim\nWORKDIR /app\n",
		"tasks/good/tests/test.sh":            "echo 1 > /logs/verifier/reward.txt\n",
		"tasks/nobody/task.toml":              "version = \"1.0\"\n",
		"tasks/nobody/instruction.md":         "Nothing to do.\n",
		"tasks/nobody/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\nUSER nobody\n",
		"tasks/nobody/tests/test.sh":          "echo 1 > /logs/verifier/reward.txt\n",
	})
	rec, _, stderr := playDaytona(t, srv, dir, 3, "w1", "--trials", "3", "--concurrency", "1")
	refused := 0
	for _, r := range rec.Results {
		switch {
		case r.TaskID == "good":
			if r.Reward == nil || *r.Reward != 1 {
				t.Errorf("good#%d: %s %q reward %v", r.Trial, r.ErrorKind, r.ErrorMessage, r.Reward)
			}
		case r.ErrorKind != runner.ErrInfra || r.Attempts > 1:
			t.Errorf("nobody#%d: %s %q, %d attempts", r.Trial, r.ErrorKind, r.ErrorMessage, r.Attempts)
		case strings.HasPrefix(r.ErrorMessage, "the image's user may not write /nonexistent/") && strings.Contains(r.ErrorMessage, "permission denied"):
			refused++
		case !strings.Contains(r.ErrorMessage, "task nobody's image: environment nobody") || !strings.Contains(r.ErrorMessage, "cannot run a job: the image's user may not write"):
			t.Errorf("nobody#%d after the refusal: %q", r.Trial, r.ErrorMessage)
		}
	}
	if n := srv.Calls(daytonatest.OpCreateSandbox); refused != 1 || n != 4 || strings.Contains(stderr, "retrying") {
		t.Errorf("%d trials refused, %d sandboxes for good's 3 trials and nobody's first, or a retry:\n%s", refused, n, stderr)
	}
	if !strings.Contains(stderr, "fix tasks/nobody/environment/Dockerfile") || strings.Contains(stderr, "--resume") {
		t.Errorf("stderr does not name the file to fix, or advises --resume:\n%s", stderr)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A task image whose user may write the job's files but not make the
// reward directory (/logs is root's, USER app): forge.sh finds out before
// the candidate runs, and the task fails once, as an image that refused an
// upload does, not three times a trial with a fresh sandbox each.
func TestDaytonaTaskImageUserCannotMakeRewardDir(t *testing.T) {
	t.Parallel()
	srv, dir := harborTasks(t, map[string]string{
		"tasks/app/task.toml":              "version = \"1.0\"\n",
		"tasks/app/instruction.md":         "Nothing to do.\n",
		"tasks/app/environment/Dockerfile": "FROM python:3.12-slim\nRUN useradd -m app && mkdir -p /tests /logs /app && chown app /tests /app\nWORKDIR /app\nUSER app\n",
		"tasks/app/tests/test.sh":          "echo 1 > /logs/verifier/reward.txt\n",
	})
	rec, _, stderr := playDaytona(t, srv, dir, 3, "m1", "--trials", "2", "--concurrency", "1")
	for _, r := range rec.Results {
		if r.ErrorKind != runner.ErrInfra || r.Attempts > 1 || !strings.Contains(r.ErrorMessage, "the image's user may not make the reward directory /logs/verifier: ") {
			t.Errorf("app#%d: %s %q, %d attempts", r.Trial, r.ErrorKind, r.ErrorMessage, r.Attempts)
		}
	}
	if n := srv.Calls(daytonatest.OpCreateSandbox); n != 1 || strings.Contains(stderr, "retrying") ||
		!strings.Contains(stderr, "fix tasks/app/environment/Dockerfile") || strings.Contains(stderr, "--resume") {
		t.Errorf("%d sandboxes (want the first trial's only), a retry, or no Dockerfile named:\n%s", n, stderr)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// Where the verifier cannot have a mount namespace of its own (the image's
// user is not root and has no sudo), a candidate that leaves the reward
// directory so that it cannot be emptied fails its trial: its own doing,
// not the infra's (before, each trial was played three times and the run
// stopped for failing infra).
func TestDaytonaCandidateSpoilsRewardDir(t *testing.T) {
	t.Parallel()
	srv, dir := harborTasks(t, map[string]string{
		"a.sh":                             "mkdir -p /logs/verifier/x && echo 1 > /logs/verifier/x/reward.txt && chmod 555 /logs/verifier/x\n",
		"tasks/app/task.toml":              "version = \"1.0\"\n",
		"tasks/app/instruction.md":         "Nothing to do.\n",
		"tasks/app/environment/Dockerfile": "FROM python:3.12-slim\nRUN useradd -m app && mkdir -p /tests /logs /app && chown app /tests /logs /app\nWORKDIR /app\nUSER app\n",
		"tasks/app/tests/test.sh":          "echo 1 > /logs/verifier/reward.txt\n",
	})
	rec, _, stderr := playDaytona(t, srv, dir, 0, "s1", "--trials", "3", "--concurrency", "1")
	for _, r := range rec.Results {
		if r.ErrorKind != runner.ErrCandidateFailed || r.Attempts > 1 || r.Reward != nil ||
			!strings.HasPrefix(r.ErrorMessage, "the candidate left the reward directory /logs/verifier so that forge.sh could not empty it for the verifier (rm: ") ||
			!strings.Contains(r.ErrorMessage, "Permission denied") {
			t.Errorf("app#%d: %s %q, %d attempts, reward %v", r.Trial, r.ErrorKind, r.ErrorMessage, r.Attempts, r.Reward)
		}
	}
	if n := srv.Calls(daytonatest.OpCreateSandbox); n != 3 || strings.Contains(stderr, "retrying") {
		t.Errorf("%d sandboxes for 3 trials, or a retry:\n%s", n, stderr)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// harborEmulator starts an emulator whose sandboxes have root file systems
// of their own (Harbor's /app, /tests and /logs are paths in them), and
// fails the test where the emulator cannot make them.
func harborEmulator(t *testing.T) *daytonatest.Server {
	t.Helper()
	if !daytonatest.RootFS() {
		t.Fatal("the Daytona emulator gives sandboxes no root file system of their own here (it needs root and overlayfs): Harbor's /app, /tests and /logs cannot be emulated")
	}
	return daytonatest.Start(t, daytonatest.Options{})
}

// playDaytona plays forge run --daytona on srv in dir as run id (with
// args), fails the test unless it exits want, and returns the run's record
// and what forge printed.
func playDaytona(t *testing.T, srv *daytonatest.Server, dir string, want int, id string, args ...string) (rec record.Record, stdout, stderr string) {
	t.Helper()
	env := []string{"DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()}
	cmd, out, errOut := forgeCmd(dir, env, append([]string{"run", "--daytona", "--no-fallback", "--run-id", id}, args...)...)
	if code := exitCodeOf(t, cmd.Run()); code != want {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", id, code, want, out, errOut)
	}
	return readResults(t, filepath.Join(dir, "artifacts", id, "results.json")), out.String(), errOut.String()
}

// harborTasks starts an emulator and writes, in a fresh directory, a
// manifest whose one candidate does nothing, judged by the verifiers of
// the Harbor tasks in tasks/ (files, by path).
func harborTasks(t *testing.T, files map[string]string) (*daytonatest.Server, string) {
	t.Helper()
	srv := harborEmulator(t)
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"forge.yaml": "harbor: tasks\ncandidates:\n  - id: a\n    script: a.sh\nscoring:\n  - type: verifier\n",
		"a.sh":       "true\n",
	})
	testfiles.Write(t, dir, files)
	return srv, dir
}

// A Harbor task's [verifier] user is who its tests run as.
func TestDaytonaHarborVerifierUser(t *testing.T) {
	t.Parallel()
	srv, dir := harborTasks(t, map[string]string{
		"tasks/who/task.toml":              "version = \"1.0\"\n[verifier]\nuser = \"nobody\"\n",
		"tasks/who/instruction.md":         "Nothing to do.\n",
		"tasks/who/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
		"tasks/who/tests/test.sh":          "echo \"verifier: $(id -un)\"\n[ \"$(id -un)\" = nobody ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
	})
	rec, _, _ := playDaytona(t, srv, dir, 0, "u1", "--quiet")
	r := rec.Results[0]
	if r.Reward == nil || *r.Reward != 1 || !strings.Contains(r.VerifierOutput, "verifier: nobody") {
		t.Errorf("reward %v, verifier: %q (%s %s)", r.Reward, r.VerifierOutput, r.ErrorKind, r.ErrorMessage)
	}
}

// A Harbor task with a prebuilt image ([environment] docker_image, no
// Dockerfile) plays in a snapshot of that image, in its [environment]
// workdir, and --oracle runs its solve.sh there with [solution] env, which
// the verifier checks; the verifier's "${JUDGE_KEY}" is the .env's, which
// no file of the run holds.
func TestDaytonaHarborPrebuiltImageAndSolutionEnv(t *testing.T) {
	t.Parallel()
	srv, dir := harborTasks(t, map[string]string{
		".env": "JUDGE_KEY=sk-judge-abcdef0123456789\n",
		"tasks/seeded/task.toml": "version = \"1.0\"\n[environment]\ndocker_image = \"ghcr.io/org/seeded:1\"\nworkdir = \"/srv/task\"\n" +
			"[solution]\nenv = {SEED = \"42\"}\n[verifier]\nenv = {KEY = \"${JUDGE_KEY}\"}\n",
		"tasks/seeded/instruction.md":    "Write the seed to /tmp/seed.\n",
		"tasks/seeded/solution/solve.sh": "echo \"$SEED\" > /tmp/seed; pwd > /tmp/where\n",
		"tasks/seeded/tests/test.sh": "echo \"key: $KEY\"; echo \"solved in $(cat /tmp/where)\"\n" +
			"[ \"$KEY\" = sk-judge-abcdef0123456789 ] && [ \"$(cat /tmp/seed 2>/dev/null)\" = 42 ] && [ \"$(cat /tmp/where)\" = /srv/task ] && " +
			"echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
	})
	rec, _, _ := playDaytona(t, srv, dir, 0, "o1", "--quiet", "--oracle")
	r := rec.Results[0]
	if r.Reward == nil || *r.Reward != 1 {
		t.Errorf("the oracle's reward %v (%s %s)", r.Reward, r.ErrorKind, r.ErrorMessage)
	}
	if !strings.Contains(r.VerifierOutput, "key: ") || strings.Contains(r.VerifierOutput, "abcdef0123456789") {
		t.Errorf("verifier output %q: want the key masked", r.VerifierOutput)
	}
	filepath.WalkDir(filepath.Join(dir, "artifacts"), func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); err == nil && !d.IsDir() && strings.Contains(string(b), "abcdef0123456789") {
			t.Errorf("%s holds the host's key", p)
		}
		return nil
	})
	snaps := srv.Snapshots()
	if len(snaps) != 1 || !strings.HasPrefix(snaps[0].Dockerfile, "FROM ghcr.io/org/seeded:1") {
		t.Errorf("snapshots %+v; want one built from the task's image", snaps)
	}
}

// A reward the candidate planted does not count: the verifier starts with
// its reward directory empty, so a verifier that writes nothing leaves the
// trial verify_failed, and one that writes its own reward is the one read.
func TestDaytonaPlantedRewardDoesNotCount(t *testing.T) {
	t.Parallel()
	srv, dir := harborTasks(t, map[string]string{
		"tasks/silent/task.toml":              "version = \"1.0\"\n",
		"tasks/silent/instruction.md":         "Nothing to do.\n",
		"tasks/silent/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
		"tasks/silent/tests/test.sh":          "echo 'the verifier writes no reward'\n",
		"tasks/judged/task.toml":              "version = \"1.0\"\n",
		"tasks/judged/instruction.md":         "Nothing to do.\n",
		"tasks/judged/environment/Dockerfile": "FROM python:3.12-slim\nENV TASK=judged\nWORKDIR /app\n",
		"tasks/judged/tests/test.sh":          "[ -e /logs/verifier/reward.txt ] && echo 'planted reward seen'\necho 0.25 > /logs/verifier/reward.txt\n",
		"a.sh":                                "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{\"reward\": 1}' > /logs/verifier/reward.json\n",
	})
	rec, _, _ := playDaytona(t, srv, dir, 0, "p1", "--quiet")
	for _, r := range rec.Results {
		switch r.TaskID {
		case "silent":
			if r.ErrorKind != runner.ErrVerifyFailed || r.Reward != nil {
				t.Errorf("silent: %s, reward %v: the planted reward counted", r.ErrorKind, r.Reward)
			}
		case "judged":
			if r.Reward == nil || *r.Reward != 0.25 || strings.Contains(r.VerifierOutput, "planted reward seen") {
				t.Errorf("judged: reward %v, verifier saw %q", r.Reward, r.VerifierOutput)
			}
		}
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A candidate that replaces the bash its task's tests run with (bash
// /tests/test.sh) by one that writes a reward of 1 is judged on it, but
// marked tampered, naming bash, in the record and the table's notes, also
// when it then runs past its timeout; an honest candidate's trial is not
// (issue 41).
func TestDaytonaHarborTamperedBashIsMarked(t *testing.T) {
	t.Parallel()
	srv := harborEmulator(t)
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"forge.yaml": "harbor: tasks\ncandidates:\n  - id: honest\n    script: honest.sh\n  - id: cheat\n    script: cheat.sh\nscoring:\n  - type: verifier\n",
		"honest.sh":  "echo done > /app/done.txt\n",
		"cheat.sh": `for b in $(command -v bash) /usr/bin/bash /bin/bash; do
  rm -f "$b" && printf '#!/bin/sh\nmkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n' > "$b" && chmod 755 "$b"
done
if [ "$FORGE_TASK_ID" = slow ]; then sleep 30; fi
`,
		"tasks/done/task.toml":              "version = \"1.0\"\n",
		"tasks/done/instruction.md":         "Write done into /app/done.txt.\n",
		"tasks/done/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
		"tasks/done/tests/test.sh":          "grep -qx done /app/done.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
		"tasks/slow/task.toml":              "version = \"1.0\"\n[agent]\ntimeout_sec = 2.0\n",
		"tasks/slow/instruction.md":         "Write done into /app/done.txt.\n",
		"tasks/slow/environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n",
		"tasks/slow/tests/test.sh":          "grep -qx done /app/done.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
	})
	rec, stdout, _ := playDaytona(t, srv, dir, 0, "t1")
	if len(rec.Results) != 4 {
		t.Fatalf("%d results, want 4", len(rec.Results))
	}
	for _, r := range rec.Results {
		switch r.CandidateID {
		case "honest":
			if r.Reward == nil || *r.Reward != 1 || r.Tampered != nil {
				t.Errorf("honest on %s: reward %v, tampered %q (%s %s)", r.TaskID, r.Reward, r.Tampered, r.ErrorKind, r.ErrorMessage)
			}
		case "cheat":
			if (r.TaskID == "slow") != (r.ErrorKind == runner.ErrTimeout) {
				t.Errorf("cheat on %s: %s %s", r.TaskID, r.ErrorKind, r.ErrorMessage)
			}
			if r.Reward == nil || *r.Reward != 1 || len(r.Tampered) == 0 || !strings.HasSuffix(r.Tampered[0], "/bash") {
				t.Errorf("cheat on %s: reward %v, tampered %q; want 1 and bash (%s %s)", r.TaskID, r.Reward, r.Tampered, r.ErrorKind, r.ErrorMessage)
			}
		}
	}
	if !strings.Contains(stdout, "tampered: /") {
		t.Errorf("the table's notes do not say the cheat tampered:\n%s", stdout)
	}
	checkEmulator(t, srv, srv.APIKey())
}
