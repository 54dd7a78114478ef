package cli_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// sleeperTournament writes a manifest whose candidates announce that they
// started (a file in markers/) and then never finish on their own; "stubborn"
// also ignores SIGTERM and leaves a child behind.
func sleeperTournament(t *testing.T) (dir, markers string) {
	t.Helper()
	dir = localtest.TempDir(t)
	markers = filepath.Join(localtest.SharedDir(t), "markers")
	if err := os.Mkdir(markers, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(markers, 0o777); err != nil { // for the jobs' users
		t.Fatal(err)
	}
	files := map[string]string{
		"sleeper.py": `import os, time
open(os.path.join(os.environ["MARKERS"], os.environ["FORGE_CANDIDATE_ID"]), "w").close()
time.sleep(3600)
`,
		"stubborn.py": `import os, signal, subprocess, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen(["sleep", "3600"])
open(os.path.join(os.environ["MARKERS"], os.environ["FORGE_CANDIDATE_ID"]), "w").close()
while True:
    time.sleep(1)
`,
		"forge.yaml": fmt.Sprintf(`objective: wait forever
defaults:
  concurrency: 2
  timeout: 10m
  env: {MARKERS: %q}
candidates:
  - {id: one, script: sleeper.py}
  - {id: stubborn, script: stubborn.py}
  - {id: never, script: sleeper.py}
`, markers),
	}
	testfiles.Write(t, dir, files)
	return dir, markers
}

func startedCount(markers string) int {
	entries, _ := os.ReadDir(markers)
	return len(entries)
}

// waitExit waits for cmd, failing (and killing it) if it hangs.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) *os.ProcessState {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return cmd.ProcessState
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("forge did not exit within %s of the signal", limit)
		return nil
	}
}

func TestInterruptCleansUpAndWritesPartialResults(t *testing.T) {
	t.Parallel()
	dir, markers := sleeperTournament(t)
	cmd := exec.Command("forge", "run", "--run-id", "sig1")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, "both running candidates to start", 60*time.Second, func() bool { return startedCount(markers) == 2 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, cmd, 60*time.Second)
	if st.ExitCode() != 130 {
		t.Fatalf("exit code %d, want 130; stderr:\n%s", st.ExitCode(), stderr.String())
	}
	if pids := localtest.Survivors("sig1"); len(pids) > 0 {
		t.Errorf("processes of the run survived forge: %v", pids)
	}
	rec, err := record.Read(filepath.Join(dir, "artifacts", "sig1", "results.json"))
	if err != nil {
		t.Fatalf("no partial results: %v", err)
	}
	if !rec.Interrupted || len(rec.Results) != 3 {
		t.Fatalf("interrupted=%v, %d results", rec.Interrupted, len(rec.Results))
	}
	for _, r := range rec.Results {
		if r.ErrorKind != runner.ErrCancelled {
			t.Errorf("%s: error_kind %q, want cancelled", r.CandidateID, r.ErrorKind)
		}
	}
	if startedCount(markers) != 2 {
		t.Errorf("a job started after the interrupt")
	}
	if !strings.Contains(stderr.String(), "interrupted; partial results in") {
		t.Errorf("stderr does not say where the partial results are:\n%s", stderr.String())
	}
}

func TestSecondInterruptExitsAtOnce(t *testing.T) {
	t.Parallel()
	dir, markers := sleeperTournament(t)
	cmd := exec.Command("forge", "run", "--run-id", "sig2")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	wait.For(t, "both running candidates to start", 60*time.Second, func() bool { return startedCount(markers) == 2 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The second signal only counts once forge has taken the first.
	for line := range lines {
		if strings.Contains(line, "stopping jobs") {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines {
		}
	}()
	st := waitExit(t, cmd, 60*time.Second)
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !(ws.Signaled() && ws.Signal() == syscall.SIGINT) && st.ExitCode() != 130 {
		t.Fatalf("forge ended with %v, want death by SIGINT or exit 130", st)
	}
	// Even a forge that quit at once leaves nothing behind: each job's
	// processes die with it.
	wait.For(t, "the run's processes to die with forge", 30*time.Second, func() bool {
		return len(localtest.Survivors("sig2")) == 0
	})
}
