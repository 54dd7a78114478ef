package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// copySample copies the repository's sample tournament into a fresh
// directory.
func copySample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "candidates"), os.DirFS(filepath.Join("..", "candidates"))); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "forge.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// forgeCmd prepares the forge command in dir with a clean environment plus
// extra variables.
func forgeCmd(dir string, extra []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command("forge", args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir()}, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

func readResults(t *testing.T, path string) record.Record {
	t.Helper()
	rec, err := record.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return *rec
}

func checkEmulator(t *testing.T, srv *daytonatest.Server, secret string) {
	t.Helper()
	if n := srv.LiveCount(); n != 0 {
		t.Errorf("%d sandboxes left alive: %+v", n, srv.Live())
	}
	for _, v := range srv.Violations() {
		t.Errorf("OpenAPI violation: %s", v)
	}
	for _, sb := range srv.Sandboxes() {
		for k, v := range sb.Env {
			if strings.HasPrefix(k, "DAYTONA_") || strings.Contains(v, secret) {
				t.Errorf("sandbox %s got %s in its environment", sb.Name, k)
			}
		}
	}
}

func TestDaytonaPlaysTheSampleTournament(t *testing.T) {
	t.Parallel()
	srv := daytonatest.Start(t, daytonatest.Options{})
	dir := copySample(t)
	key := srv.APIKey()
	cmd, stdout, stderr := forgeCmd(dir, []string{"DAYTONA_API_KEY=" + key, "DAYTONA_API_URL=" + srv.URL()},
		"run", "--daytona", "--no-fallback", "--run-id", "d1")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "d1", "results.json"))
	if rec.Backend != "daytona" || len(rec.Results) != 3 {
		t.Fatalf("backend %q, %d results", rec.Backend, len(rec.Results))
	}
	for _, r := range rec.Results {
		if r.Backend != "daytona" || r.SandboxID == "" {
			t.Errorf("%s: backend %q sandbox %q", r.CandidateID, r.Backend, r.SandboxID)
		}
		if r.CandidateID != "gamma" && !r.Success {
			t.Errorf("%s failed: %s %s", r.CandidateID, r.ErrorKind, r.ErrorMessage)
		}
	}
	if !strings.Contains(stdout.String(), "winner") {
		t.Errorf("no standings on stdout:\n%s", stdout)
	}
	for name, text := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.Contains(text, key) {
			t.Errorf("the API key appears on %s", name)
		}
	}
	for _, name := range []string{record.ResultsFile, record.TrialsFile} {
		if b, _ := os.ReadFile(filepath.Join(dir, "artifacts", "d1", name)); bytes.Contains(b, []byte(key)) {
			t.Errorf("the API key appears in %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts", "d1", "sandboxes.jsonl")); err != nil {
		t.Errorf("no sandbox ledger: %v", err)
	}
	checkEmulator(t, srv, key)
}

func TestDaytonaBadKeyExitsThreeAndStartsNothingElse(t *testing.T) {
	t.Parallel()
	srv := daytonatest.Start(t, daytonatest.Options{})
	dir := copySample(t)
	const wrong = "dtn_wrong_key_0123456789"
	cmd, _, stderr := forgeCmd(dir, []string{"DAYTONA_API_KEY=" + wrong, "DAYTONA_API_URL=" + srv.URL()},
		"run", "--daytona", "--run-id", "bad")
	if code := exitCodeOf(t, cmd.Run()); code != 3 {
		t.Fatalf("exit %d, want 3\nstderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr.String(), wrong) {
		t.Error("the key is printed")
	}
	if !strings.Contains(strings.ToLower(stderr.String()), "auth") && !strings.Contains(stderr.String(), "401") {
		t.Errorf("stderr does not say the key was refused:\n%s", stderr)
	}
	checkEmulator(t, srv, wrong)
}

func TestDaytonaFallsBackWithoutKey(t *testing.T) {
	t.Parallel()
	dir := copySample(t)
	cmd, _, stderr := forgeCmd(dir, []string{"DAYTONA_API_KEY=your_api_key_here"}, "run", "--daytona", "--run-id", "fb", "--only", "beta")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "running locally instead") {
		t.Errorf("no fallback notice:\n%s", stderr)
	}
	if rec := readResults(t, filepath.Join(dir, "artifacts", "fb", "results.json")); rec.Backend != "local" {
		t.Errorf("backend %q", rec.Backend)
	}
	cmd, _, stderr = forgeCmd(dir, nil, "run", "--daytona", "--no-fallback", "--run-id", "nf")
	if code := exitCodeOf(t, cmd.Run()); code != 3 {
		t.Fatalf("--no-fallback: exit %d, want 3\nstderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts", "nf")); err == nil {
		t.Error("--no-fallback without a key still started a run")
	}
}

func TestDaytonaInterruptDeletesEverySandbox(t *testing.T) {
	t.Parallel()
	dir, markers := sleeperTournament(t)
	// The candidates leave their start markers on this machine.
	srv := daytonatest.Start(t, daytonatest.Options{Shared: []string{markers}})
	cmd, _, stderr := forgeCmd(dir, []string{"DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()},
		"run", "--daytona", "--no-fallback", "--run-id", "dsig")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, "both sandboxed candidates to start", 60*time.Second, func() bool { return startedCount(markers) == 2 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, cmd, 90*time.Second)
	if st.ExitCode() != 130 {
		t.Fatalf("exit %d, want 130\nstderr:\n%s", st.ExitCode(), stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "dsig", "results.json"))
	for _, r := range rec.Results {
		if r.ErrorKind != runner.ErrCancelled {
			t.Errorf("%s: %q, want cancelled", r.CandidateID, r.ErrorKind)
		}
	}
	checkEmulator(t, srv, srv.APIKey())
	// The deleted sandboxes' processes end as the emulator tears them down,
	// just after it answered the deletes.
	wait.For(t, "the emulator's sandbox processes to end", 30*time.Second, func() bool { return srv.Running() == 0 })
}
