//go:build linux

package local

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

func TestRunSetupFailureSkipsCandidate(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	marker := filepath.Join(localtest.SharedDir(t), "candidate-ran")
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
