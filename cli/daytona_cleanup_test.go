package cli_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// A sandbox the API refuses to delete is named on stderr and in
// results.json's undeleted_sandboxes, and forge gc, run as a user would,
// deletes it later.
func TestUndeletedSandboxIsRecordedAndCollectedByGC(t *testing.T) {
	t.Parallel()
	srv := daytonatest.Start(t, daytonatest.Options{})
	dir := writeTournament(t, 1, "echo ok > \"$2\"\n", "")
	// Every deletion the run tries (the job's own, then the sweep at the
	// end) is refused with an error no retry fixes.
	srv.Inject(daytonatest.OpDeleteSandbox, daytonatest.Fault{Status: 400, Times: 2})
	env := []string{"DAYTONA_API_KEY=" + srv.APIKey(), "DAYTONA_API_URL=" + srv.URL()}
	cmd, _, stderr := forgeCmd(dir, env, "run", "--daytona", "--run-id", "r", "--quiet")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	live := srv.Live()
	if len(live) != 1 {
		t.Fatalf("%d sandboxes alive, want the undeleted one: %+v", len(live), live)
	}
	name := live[0].Name
	rec := readResults(t, filepath.Join(dir, "artifacts", "r", "results.json"))
	if !slices.ContainsFunc(rec.UndeletedSandboxes, func(s string) bool { return strings.Contains(s, name) }) {
		t.Errorf("undeleted_sandboxes %v does not name %s", rec.UndeletedSandboxes, name)
	}
	if !strings.Contains(stderr.String(), name) && !strings.Contains(stderr.String(), live[0].ID) {
		t.Errorf("stderr does not name %s:\n%s", name, stderr)
	}
	if n := srv.Calls(daytonatest.OpDeleteSandbox); n != 2 {
		t.Fatalf("%d deletions tried, want 2 (the fault must be used up for gc)", n)
	}

	cmd, stdout, stderr := forgeCmd(dir, env, "gc", "--dry-run", "--older-than", "0")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("gc --dry-run: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout.String()+stderr.String(), name) || srv.LiveCount() != 1 {
		t.Fatalf("gc --dry-run: live %d, output:\n%s%s", srv.LiveCount(), stdout, stderr)
	}
	cmd, stdout, stderr = forgeCmd(dir, env, "gc", "--older-than", "0")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("gc: exit %d\n%s%s", code, stdout, stderr)
	}
	checkEmulator(t, srv, srv.APIKey())
}

// An API that cannot be reached is exit 3 with a line that says so, and
// nothing is left behind.
func TestUnreachableAPIExitsThree(t *testing.T) {
	t.Parallel()
	dir := writeTournament(t, 2, "echo ok > \"$2\"\n", "")
	cmd, _, stderr := forgeCmd(dir, []string{"DAYTONA_API_KEY=dtn_0123456789abcdef0123456789", "DAYTONA_API_URL=http://127.0.0.1:9/api"},
		"run", "--daytona", "--run-id", "r", "--quiet")
	if code := exitCodeOf(t, cmd.Run()); code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "127.0.0.1:9") || !strings.Contains(stderr.String(), "connection refused") {
		t.Errorf("stderr does not say the API is unreachable:\n%s", stderr)
	}
}
