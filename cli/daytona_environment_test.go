package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// environmentTournament writes a manifest of two candidates × trials
// trials in an environment whose build writes greeting.txt's content and
// a command, greet, that prints it; build are extra build steps.
func environmentTournament(t *testing.T, trials int, build ...string) string {
	t.Helper()
	dir := t.TempDir()
	steps := append([]string{
		`mkdir -p bin && printf '#!/bin/sh\ncat "$FORGE_ENV_DIR/greeting.txt"\n' > bin/greet && chmod +x bin/greet`,
	}, build...)
	var b strings.Builder
	b.WriteString("objective: Say the greeting\nenvironments:\n  tools:\n    files: [greeting.txt]\n    build:\n")
	for _, s := range steps {
		b.WriteString("      - '" + strings.ReplaceAll(s, "'", "''") + "'\n")
	}
	b.WriteString("defaults: {environment: tools, concurrency: 6, trials: " + strconv.Itoa(trials) + "}\n")
	b.WriteString("candidates:\n  - {id: a, script: say.sh}\n  - {id: b, script: say.sh}\n")
	for name, text := range map[string]string{
		"forge.yaml":   b.String(),
		"say.sh":       "greet > \"$2\"\n",
		"greeting.txt": "greeting from the snapshot\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Through the CLI on the emulator: the environment is one snapshot, built
// once for both candidates' trials, every sandbox is created from it, the
// next run builds nothing, and forge gc deletes it once unused.
func TestDaytonaEnvironmentIsOneSnapshot(t *testing.T) {
	t.Parallel()
	srv := daytonatest.Start(t, daytonatest.Options{})
	dir := environmentTournament(t, 3)
	env := []string{"DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()}
	cmd, _, stderr := forgeCmd(dir, env, "run", "--daytona", "--no-fallback", "--run-id", "e1", "--quiet")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "e1", "results.json"))
	if len(rec.Environments) != 1 || rec.Environments[0].Reused || !strings.HasPrefix(rec.Environments[0].Where, runner.SnapshotPrefix) {
		t.Fatalf("environments: %+v", rec.Environments)
	}
	snap := rec.Environments[0].Where
	if len(rec.Results) != 6 {
		t.Fatalf("%d results, want 6", len(rec.Results))
	}
	for _, r := range rec.Results {
		if !r.Success || r.Environment != rec.Environments[0].Hash {
			t.Errorf("%s trial %d: success %v, environment %q: %s %s", r.CandidateID, r.Trial, r.Success, r.Environment, r.ErrorKind, r.ErrorMessage)
		}
		if !strings.Contains(r.ArtifactContent, "greeting from the snapshot") {
			t.Errorf("%s trial %d: artifact %q", r.CandidateID, r.Trial, r.ArtifactContent)
		}
	}
	if n := srv.Calls(daytonatest.OpCreateSnapshot); n != 1 {
		t.Errorf("%d snapshot creates, want 1", n)
	}
	for _, sb := range srv.Sandboxes() {
		if sb.Snapshot != snap {
			t.Errorf("sandbox %s created from %q, want %q", sb.Name, sb.Snapshot, snap)
		}
	}
	checkEmulator(t, srv, srv.APIKey())

	cmd, _, stderr = forgeCmd(dir, env, "run", "--daytona", "--no-fallback", "--run-id", "e2", "--quiet")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("second run: exit %d\nstderr:\n%s", code, stderr)
	}
	rec = readResults(t, filepath.Join(dir, "artifacts", "e2", "results.json"))
	if len(rec.Environments) != 1 || !rec.Environments[0].Reused {
		t.Errorf("second run's environments: %+v", rec.Environments)
	}
	if n := srv.Calls(daytonatest.OpCreateSnapshot); n != 1 {
		t.Errorf("the second run created a snapshot: %d creates", n)
	}

	cmd, stdout, stderr := forgeCmd(dir, env, "gc", "--daytona", "--older-than", "0")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("gc: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout.String(), "deleted snapshot "+snap) {
		t.Errorf("gc did not delete %s:\n%s", snap, stdout)
	}
	if n := srv.Calls(daytonatest.OpDeleteSnapshot); n != 1 {
		t.Errorf("%d snapshot deletes, want 1", n)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// A failing build step stops the run with exit 3 and the build log's last
// lines, before any sandbox; no snapshot is left to be taken for built.
func TestDaytonaFailingEnvironmentBuildExitsThree(t *testing.T) {
	t.Parallel()
	srv := daytonatest.Start(t, daytonatest.Options{})
	dir := environmentTournament(t, 2, "echo about to fail", "exit 7")
	env := []string{"DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()}
	cmd, _, stderr := forgeCmd(dir, env, "run", "--daytona", "--no-fallback", "--run-id", "f1", "--quiet")
	if code := exitCodeOf(t, cmd.Run()); code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "about to fail") || !strings.Contains(stderr.String(), "exit code: 7") {
		t.Errorf("stderr lacks the build log's tail:\n%s", stderr)
	}
	if n := len(srv.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes created for a failed environment", n)
	}
	if n := len(srv.Snapshots()); n != 1 {
		t.Errorf("%d snapshots created, want 1 (deleted once its build failed)", n)
	}
	for _, sn := range srv.Snapshots() {
		if sn.State != "removed" && sn.State != "removing" {
			t.Errorf("snapshot %s left %s", sn.Name, sn.State)
		}
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "f1", "results.json"))
	if len(rec.Environments) != 1 || rec.Environments[0].Error == "" {
		t.Errorf("environments: %+v", rec.Environments)
	}
	checkEmulator(t, srv, srv.APIKey())
}
